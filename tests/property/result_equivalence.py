"""Are two results of one random query the same answer?

Without ORDER BY the rows compare as multisets. With ORDER BY the key columns compare row by
row (the order is the answer), and then the full rows compare as multisets: rows tying on
the keys may legitimately come in any order. When LIMIT (or OFFSET) cut through a group of
rows tying on the keys, which of those rows made it in is not determined either, so that
group at the cut is left out of the multiset comparison (its keys were still compared).
Values compare as ``flowsql.tpch.verify.compare_tables`` does: exact numbers exactly, floats
with a relative tolerance, NULL equal to NULL.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.tpch.verify import compare_tables
from tests.property.random_queries import RandomQuery


def _tie_mask(keys: pa.Table, row: int) -> pa.Array:
    """True where a row's keys equal those of ``row`` (NULL equal to NULL)."""
    mask = pa.array([True] * keys.num_rows)
    for column in keys.columns:
        value = column[row]
        if value.is_valid:
            same = pc.fill_null(pc.equal(column, value), False)
        else:
            same = pc.is_null(column)
        mask = pc.and_(mask, same)
    return mask


def _without_cut_groups(table: pa.Table, positions: tuple[int, ...], head: bool,
                        tail: bool) -> pa.Table:
    """``table`` without its first / last group of rows tying on the key columns."""
    if table.num_rows == 0:
        return table
    keys = table.select(list(positions))
    keep = pa.array([True] * table.num_rows)
    for cut, row in ((head, 0), (tail, table.num_rows - 1)):
        if cut:
            keep = pc.and_(keep, pc.invert(_tie_mask(keys, row)))
    return table.filter(keep)


def differences(query: RandomQuery, actual: pa.Table, expected: pa.Table) -> list[str]:
    """Human-readable differences between two results of ``query``; empty when equal."""
    if not query.order_positions:
        return compare_tables(actual, expected, ordered=False)
    if actual.num_columns != expected.num_columns:
        return compare_tables(actual, expected, ordered=False)
    positions = list(query.order_positions)
    in_order = compare_tables(actual.select(positions), expected.select(positions),
                              ordered=True)
    if in_order:
        return ["ORDER BY keys differ: " + line for line in in_order]
    return compare_tables(
        _without_cut_groups(actual, query.order_positions, query.cut_head, query.cut_tail),
        _without_cut_groups(expected, query.order_positions, query.cut_head, query.cut_tail),
        ordered=False)
