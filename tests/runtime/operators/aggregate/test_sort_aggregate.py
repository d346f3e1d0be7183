"""Sort aggregate against DuckDB and the hash aggregate over input sorted on the groups,
cut into batches of many sizes so groups span batch boundaries."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, Call, Expr, Literal
from flowsql.planner.physical import HashAggregateExec, SortAggregateExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.registry import create_operator
from tests.harness.operators import assert_rows, drive, duck, leaf
from tests.runtime.operators.aggregate.test_hash_aggregate import AGGS, DATA

#: DATA three times over (so groups have more rows than a batch), with a float key that
#: has NULL and NaN
BIG = pa.concat_tables([DATA] * 3)
BIG = BIG.append_column("n", pa.array([1.0, float("nan"), None, 2.0] * 6))


def _sorted(table: pa.Table, groups: list[int]) -> pa.Table:
    if not groups:
        return table
    return table.sort_by([(table.column_names[i], "ascending", "at_end") for i in groups])


def _nodes(groups: list[int], aggs: list[tuple], table: pa.Table, chunk: int,
           filtered: bool) -> tuple[SortAggregateExec, HashAggregateExec, list[pa.RecordBatch]]:
    node, batches = leaf(table, chunk)
    refs = [f.ref() for f in node.fields]
    cond: Expr | None = (Call("gt", (refs[4], Literal(1.2, T.FLOAT64)), T.BOOL)
                         if filtered else None)
    calls = tuple(AggCall(name, (refs[col],) if col is not None else (), dtype, distinct,
                          cond) for name, col, dtype, distinct, _ in aggs)
    group_fields = tuple(node.fields[i] for i in groups)
    agg_fields = tuple(Field.fresh(f"a{i}", a.dtype) for i, a in enumerate(calls))
    keys = tuple(refs[i] for i in groups)
    return (SortAggregateExec(node, keys, group_fields, calls, agg_fields, 1.0),
            HashAggregateExec(node, keys, group_fields, calls, agg_fields, 1.0), batches)


def _sql(table: pa.Table, groups: list[int], aggs: list[tuple], filtered: bool) -> str:
    names = [table.column_names[i] for i in groups]
    flt = " FILTER (WHERE f > 1.2)" if filtered else ""
    select = ", ".join([*names, *(a[4] + flt for a in aggs)])
    group = f" GROUP BY {', '.join(names)}" if names else ""
    return f"SELECT {select} FROM t{group}"


def _assert_group_order(out: pa.Table, width: int) -> None:
    """Groups come out sorted ascending, NULLS LAST (NaN before NULL), like the input."""
    if not width:
        return
    names = [f"c{i}" for i in range(width)]
    groups = out.select(list(range(width))).rename_columns(names)
    expected = groups.sort_by([(n, "ascending", "at_end") for n in names])
    assert _comparable(groups) == _comparable(expected)


def _comparable(table: pa.Table) -> list[tuple[object, ...]]:
    """Rows with NaN spelled out (NaN is unequal to itself)."""
    return [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row.values())
            for row in table.to_pylist()]


@pytest.mark.parametrize("groups", [[], [0], [0, 1], [5], [3, 2], [6], [6, 0]])
@pytest.mark.parametrize("filtered", [False, True])
@pytest.mark.parametrize("chunk", [1, 2, 5, 1000])
def test_sorted_groups_match_duckdb_and_hash_aggregate(groups: list[int], filtered: bool,
                                                       chunk: int) -> None:
    table = _sorted(BIG, groups)
    node, hashed, batches = _nodes(groups, AGGS, table, chunk, filtered)
    out = drive(node, batches)
    assert out.schema.types[len(groups):] == [a[2] for a in AGGS]
    assert_rows(out, duck(_sql(table, groups, AGGS, filtered), t=table))
    assert_rows(out, drive(hashed, batches))
    _assert_group_order(out, len(groups))


def test_no_groups_is_one_row_also_over_nothing() -> None:
    node, _, batches = _nodes([], AGGS, BIG, 4, False)
    assert_rows(drive(node, batches), duck(_sql(BIG, [], AGGS, False), t=BIG))
    empty = BIG.slice(0, 0)
    assert_rows(drive(node, []), duck(_sql(empty, [], AGGS, False), t=empty))
    grouped, _, _ = _nodes([0], AGGS, BIG, 4, False)
    assert drive(grouped, []).num_rows == 0


def test_distinct_groups_without_aggregates() -> None:
    table = _sorted(BIG, [0, 1])
    node, _, batches = _nodes([0, 1], [], table, 3, False)
    out = drive(node, batches)
    assert_rows(out, duck("SELECT DISTINCT g, d FROM t", t=table))
    _assert_group_order(out, 2)


def test_holds_one_group_at_a_time() -> None:
    rows = 100_000
    table = pa.table({"g": np.arange(rows, dtype=np.int64) // 10,
                      "v": np.arange(rows, dtype=np.float64)})
    node, batches = leaf(table, 1000)
    refs = [f.ref() for f in node.fields]
    calls = (AggCall("sum", (refs[1],), T.FLOAT64, False, None),
             AggCall("count", (refs[1],), T.INT64, True, None))
    fields = tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))
    agg = SortAggregateExec(node, (refs[0],), (node.fields[0],), calls, fields, 1.0)
    budget = MemoryBudget(None)
    operator = create_operator(agg)
    operator.open(OperatorContext("test", {"execution.batch-size": "4096"}, budget))
    out = [b for batch in batches for b in operator.process_batch(0, batch)]
    out += list(operator.end_input(0))
    operator.close()
    result = pa.Table.from_batches(out)
    assert result.num_rows == rows // 10
    assert result.column(0).to_pylist() == list(range(rows // 10))
    assert result.column(2).to_pylist() == [10] * (rows // 10)
    assert budget.peak < 1000, budget.peak
