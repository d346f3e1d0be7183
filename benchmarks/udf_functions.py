"""The Python UDF ``udf_overhead.py`` measures (imported by path: ``udf_functions.twice``)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

import flowsql


@flowsql.udf(result_type="BIGINT")
def twice(x: pa.Array) -> pa.Array:
    """x * 2, vectorized: the same kernel the built-in expression runs."""
    return pc.multiply(x, 2)
