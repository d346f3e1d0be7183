"""Table functions the tests call by import path (``tests.udfs.tables.NAME``).

Each follows the array contract of ``flowsql/runtime/user_functions/table.py``: arrays in,
(rows, parent indices) out. ``CALLS`` counts the input rows each function was given, so a
test can see how many rows reached it.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import flowsql
from flowsql.runtime.user_functions.table import row_wise

CALLS: Counter[str] = Counter()


@flowsql.udtf([("i", "BIGINT"), ("down", "BIGINT")], rows_per_call=3.0)
def series(n: pa.Array) -> tuple[pa.Table, pa.Array]:
    """Rows 1..n (none for NULL or n < 1), with n - i + 1 beside: like DuckDB's
    ``generate_series(1, n)``."""
    CALLS["series"] += len(n)
    counts = np.clip(pc.fill_null(n, 0).to_numpy(zero_copy_only=False), 0, None)
    parents = np.repeat(np.arange(len(n)), counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    i = np.arange(parents.size) - starts + 1
    down = np.repeat(counts, counts) - i + 1
    return pa.table({"i": i, "down": down}), pa.array(parents)


@flowsql.udtf([("w", "VARCHAR"), ("len", "INT")])
def words(s: pa.Array) -> tuple[list[pa.Array], pa.Array]:
    """The space-separated words of a string, each with its length."""
    CALLS["words"] += len(s)
    lists = pc.split_pattern(s, " ")
    flat = pc.list_flatten(lists)
    keep = pc.not_equal(pc.utf8_length(flat), 0)
    parents = pc.filter(pc.list_parent_indices(lists), keep)
    flat = pc.filter(flat, keep)
    return [flat, pc.utf8_length(flat)], parents


@flowsql.udtf([("x", "BIGINT")])
def fails_on_three(x: pa.Array) -> tuple[list[pa.Array], pa.Array]:
    """One row per input row with x itself; raises when any x is 3."""
    if pc.any(pc.equal(x, 3)).as_py():
        raise ValueError("three is not allowed")
    return [x], pa.array(np.arange(len(x)))


@flowsql.udtf([("a", "BIGINT"), ("b", "BIGINT")])
@row_wise
def pairs(a: int | None, b: int | None):  # type: ignore[no-untyped-def]
    """Row-wise form: (a, b) and (b, a) when both are given."""
    if a is not None and b is not None:
        yield (a, b)
        yield (b, a)
