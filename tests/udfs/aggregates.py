"""Aggregate sample functions: called once per group with the group's arrays."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

import flowsql


@flowsql.udaf(result_type="DOUBLE", arg_types=["DOUBLE", "DOUBLE"])
def weighted_avg(values: pa.Array, weights: pa.Array) -> float | None:
    """sum(v * w) / sum(w) over the rows where both are set; NULL for none."""
    total = pc.sum(weights).as_py()
    if not total:
        return None
    return pc.sum(pc.multiply(values, weights)).as_py() / total


@flowsql.udaf(result_type="BIGINT")
def spread(values: pa.Array) -> int | None:
    """max - min (NULL over no values)."""
    bounds = pc.min_max(values).as_py()
    return None if bounds["min"] is None else bounds["max"] - bounds["min"]


@flowsql.udaf(result_type="VARCHAR")
def joined(values: pa.Array) -> str:
    """The group's strings sorted and joined with '|' (a deterministic order)."""
    return "|".join(sorted(v for v in values.to_pylist() if v is not None))


@flowsql.udaf(result_type="BIGINT")
def row_count(values: pa.Array) -> int:
    return len(values)


@flowsql.udaf(result_type="BIGINT")
def fails_on_big_group(values: pa.Array) -> int:
    if len(values) > 2:
        raise RuntimeError("too many rows")
    return len(values)
