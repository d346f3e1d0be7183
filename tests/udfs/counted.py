"""Boolean functions that count the rows they are called on (``ROWS``), so a test can see
how many rows reached them after the optimizer ordered and placed the predicates."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

import flowsql

ROWS: Counter[str] = Counter()


@flowsql.udf(result_type="BOOLEAN", cost_per_row=100.0)
def slow_odd(x: pa.Array) -> pa.Array:
    """x is odd; declared expensive."""
    ROWS["slow_odd"] += len(x)
    return pc.equal(pc.bit_wise_and(x, 1), 1)
