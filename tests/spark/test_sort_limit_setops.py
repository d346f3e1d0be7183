"""Sort with NULLS FIRST/LAST, top-N, LIMIT/OFFSET, set operations with ALL, VALUES."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.expressions import SortKey
from flowsql.planner.physical import LimitExec, SetOpExec, SortExec, TopNExec, ValuesExec

from .builders import col, fields_for, lit, project, scan
from .compare import assert_rows, check, run

D = decimal.Decimal


@pytest.mark.parametrize("column,ascending,nulls_first", [
    ("x", True, True), ("x", True, False), ("x", False, True), ("grp", False, False)])
def test_sort_nulls_first_last(tables, duck, column: str, ascending: bool,  # type: ignore[no-untyped-def]
                               nulls_first: bool) -> None:
    t = scan(tables["t"])
    plan = SortExec(t, (SortKey(col(t, column), ascending, nulls_first),
                        SortKey(col(t, "id"), False)), 12.0)
    order = f"{column} {'ASC' if ascending else 'DESC'} NULLS {'FIRST' if nulls_first else 'LAST'}"
    check(plan, duck, f"SELECT * FROM t ORDER BY {order}, id DESC", ordered=True)


def test_top_n_with_offset(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t = scan(tables["t"])
    keys = (SortKey(col(t, "price"), False, False), SortKey(col(t, "id")))
    check(TopNExec(t, keys, 4, 2, 4.0), duck,
          "SELECT * FROM t ORDER BY price DESC NULLS LAST, id LIMIT 4 OFFSET 2", ordered=True)
    check(TopNExec(t, keys, 3, 0, 3.0), duck,
          "SELECT * FROM t ORDER BY price DESC NULLS LAST, id LIMIT 3", ordered=True)


def test_limit_and_offset(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t = scan(tables["t"])
    ordered = SortExec(t, (SortKey(col(t, "id")),), 12.0)
    check(LimitExec(ordered, 3, 1, 3.0), duck, "SELECT * FROM t ORDER BY id LIMIT 3 OFFSET 1",
          ordered=True)
    assert run(LimitExec(t, None, 10, 2.0)).num_rows == 2
    assert run(LimitExec(t, 5, 0, 5.0)).num_rows == 5


@pytest.mark.parametrize("kind", ["union", "intersect", "except"])
@pytest.mark.parametrize("all_", [True, False])
def test_set_operations(tables, duck, kind: str, all_: bool) -> None:  # type: ignore[no-untyped-def]
    t, u = scan(tables["t"]), scan(tables["u"])
    left = project(t, ("k", col(t, "k")), ("tag", lit("x", T.STRING)))
    right = project(u, ("k", col(u, "k")), ("tag", lit("x", T.STRING)))
    fields = fields_for(("k", T.INT64), ("tag", T.STRING))
    plan = SetOpExec(left, right, kind, all_, fields, 10.0)
    op = f"{kind.upper()}{' ALL' if all_ else ''}"
    check(plan, duck, f"SELECT k, 'x' FROM t {op} SELECT k, 'x' FROM u")


def test_values(duck) -> None:  # type: ignore[no-untyped-def]
    fields = fields_for(("a", T.INT32), ("b", pa.decimal128(5, 2)), ("c", T.STRING),
                        ("d", T.DATE), ("e", T.FLOAT64))
    rows = ((lit(1, T.INT32), lit(D("1.25"), pa.decimal128(5, 2)), lit("x", T.STRING),
             lit(dt.date(2020, 2, 29), T.DATE), lit(None, T.FLOAT64)),
            (lit(None, T.INT32), lit(None, pa.decimal128(5, 2)), lit(None, T.STRING),
             lit(None, T.DATE), lit(float("inf"), T.FLOAT64)))
    check(ValuesExec(fields, rows, 2.0), duck,
          "SELECT * FROM (VALUES (1, 1.25::DECIMAL(5,2), 'x', DATE '2020-02-29', NULL::DOUBLE),"
          " (NULL, NULL, NULL, NULL, 'inf'::DOUBLE))")
    empty = run(ValuesExec(fields, (), 0.0))
    assert empty.num_rows == 0


def test_values_without_columns_feed_a_projection() -> None:
    one_row = ValuesExec((), ((),), 1.0)
    plan = project(one_row, ("answer", lit(42, T.INT64)), ("dup", lit("y", T.STRING)))
    assert_rows(run(plan), [(42, "y")])


def test_duplicate_output_names_and_repeated_column(tables) -> None:  # type: ignore[no-untyped-def]
    t = scan(tables["t"])
    same = t.fields[0]
    plan = project(SortExec(t, (SortKey(col(t, "id")),), 12.0),
                   ("id", col(t, "id")), ("id", col(t, "k")))
    result = run(plan)
    assert result.schema.names == ["id", "id"]
    repeated = LimitExec(
        type(plan)(t, (same.ref(), same.ref()), (same, same), 12.0), None, 0, 12.0)
    assert sorted(run(repeated).column(1).to_pylist()) == list(range(1, 13))
