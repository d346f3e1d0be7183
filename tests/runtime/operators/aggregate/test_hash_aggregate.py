"""Hash aggregate against DuckDB over the same tables."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, Call, Expr, Literal
from flowsql.planner.physical import HashAggregateExec
from flowsql.planner.schema import Field
from tests.harness.operators import assert_rows, drive, duck, leaf

D = decimal.Decimal

DATA = pa.table({
    "g": pa.array(["a", "b", None, "a", "b", None, "a", "c"]),
    "d": pa.array([datetime.date(2020, 1, 1), None, datetime.date(2020, 1, 1), None,
                   datetime.date(2021, 5, 5), datetime.date(2020, 1, 1), None, None]),
    "i": pa.array([1, 2, 2, None, 5, 5, 1, None], pa.int32()),
    "m": pa.array([D("1.50"), D("2.25"), None, D("1.50"), D("9.99"), D("1.50"), D("3.00"),
                   None], pa.decimal128(15, 2)),
    "f": pa.array([1.5, None, 2.0, 4.0, 8.0, 1.0, None, None]),
    "b": pa.array([True, False, None, True, True, None, False, None]),
})

# (name, column index, result type, distinct, sql)
AGGS = [
    ("sum", 2, T.INT64, False, "sum(i)"),
    ("sum", 3, pa.decimal128(38, 2), False, "sum(m)"),
    ("sum", 4, T.FLOAT64, False, "sum(f)"),
    ("count", 2, T.INT64, False, "count(i)"),
    ("count_star", None, T.INT64, False, "count(*)"),
    ("avg", 3, T.FLOAT64, False, "avg(m)"),
    ("avg", 2, T.FLOAT64, False, "avg(i)"),
    ("min", 0, T.STRING, False, "min(g)"),
    ("max", 1, T.DATE, False, "max(d)"),
    ("max", 3, pa.decimal128(15, 2), False, "max(m)"),
    ("stddev_samp", 4, T.FLOAT64, False, "stddev_samp(f)"),
    ("stddev_pop", 4, T.FLOAT64, False, "stddev_pop(f)"),
    ("var_samp", 3, T.FLOAT64, False, "var_samp(m)"),
    ("var_pop", 2, T.FLOAT64, False, "var_pop(i)"),
    ("bool_and", 5, T.BOOL, False, "bool_and(b)"),
    ("bool_or", 5, T.BOOL, False, "bool_or(b)"),
    ("count", 3, T.INT64, True, "count(DISTINCT m)"),
    ("sum", 3, pa.decimal128(38, 2), True, "sum(DISTINCT m)"),
    ("avg", 2, T.FLOAT64, True, "avg(DISTINCT i)"),
    ("sum", 2, T.INT64, True, "sum(DISTINCT i)"),
    ("stddev_samp", 2, T.FLOAT64, True, "stddev_samp(DISTINCT i)"),
    ("min", 2, T.INT32, True, "min(DISTINCT i)"),
]


def _aggregate(groups: list[int], aggs: list[tuple], table: pa.Table = DATA,
               filtered: bool = False) -> tuple[HashAggregateExec, list[pa.RecordBatch]]:
    node, batches = leaf(table)
    refs = [f.ref() for f in node.fields]
    cond: Expr | None = (Call("gt", (refs[4], Literal(1.2, T.FLOAT64)), T.BOOL)
                         if filtered else None)
    calls = tuple(AggCall(name, (refs[col],) if col is not None else (), dtype, distinct,
                          cond) for name, col, dtype, distinct, _ in aggs)
    group_fields = tuple(node.fields[i] for i in groups)
    agg_fields = tuple(Field.fresh(f"a{i}", a.dtype) for i, a in enumerate(calls))
    return HashAggregateExec(node, tuple(refs[i] for i in groups), group_fields, calls,
                             agg_fields, 1.0), batches


def _sql(groups: list[int], aggs: list[tuple], filtered: bool = False) -> str:
    names = [DATA.column_names[i] for i in groups]
    flt = " FILTER (WHERE f > 1.2)" if filtered else ""
    select = ", ".join([*names, *(a[4] + flt for a in aggs)])
    group = f" GROUP BY {', '.join(names)}" if names else ""
    return f"SELECT {select} FROM t{group}"


@pytest.mark.parametrize("groups", [[], [0], [0, 1], [5], [3, 2]])
@pytest.mark.parametrize("filtered", [False, True])
def test_aggregates_match_duckdb(groups: list[int], filtered: bool) -> None:
    node, batches = _aggregate(groups, AGGS, filtered=filtered)
    out = drive(node, batches)
    assert out.schema.types[len(groups):] == [a[2] for a in AGGS]
    assert_rows(out, duck(_sql(groups, AGGS, filtered), t=DATA))


def test_no_groups_over_empty_input_is_one_row() -> None:
    node, _ = _aggregate([], AGGS)
    out = drive(node, [])
    assert_rows(out, duck(_sql([], AGGS), t=DATA.slice(0, 0)))
    grouped, _ = _aggregate([0], AGGS)
    assert drive(grouped, []).num_rows == 0


def test_distinct_without_aggregates() -> None:
    node, batches = _aggregate([0, 1], [])
    assert_rows(drive(node, batches), duck("SELECT DISTINCT g, d FROM t", t=DATA))


def test_any_value_picks_a_group_value() -> None:
    node, batches = _aggregate([0], [("any_value", 3, pa.decimal128(15, 2), False, "")])
    out = drive(node, batches).to_pydict()
    values = dict(zip(out["g"], out["a0"]))
    assert values["c"] is None and values["b"] in (D("2.25"), D("9.99"))
