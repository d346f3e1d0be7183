"""Filter, project, limit, sort and top-N (checked as sort then limit) against DuckDB over
the same data."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Literal, SortKey
from flowsql.planner.physical import (
    FilterExec,
    LimitExec,
    ProjectExec,
    SortExec,
    TopNExec,
    ValuesExec,
)
from flowsql.planner.schema import Field
from tests.harness.operators import assert_rows, drive, duck, leaf

D = decimal.Decimal

DATA = pa.table({
    "a": pa.array([3, None, 1, 2, 5, None, 4, 2], pa.int64()),
    "s": pa.array(["x", "y", None, "x", "z", "w", None, "y"]),
    "m": pa.array([D("1.50"), D("2.25"), None, D("0.10"), D("9.99"), D("1.50"), D("3.00"),
                   None], pa.decimal128(15, 2)),
})


def test_filter_keeps_true_rows_only() -> None:
    node, batches = leaf(DATA)
    a = node.fields[0].ref()
    pred = Call("gt", (a, Literal(1, T.INT64)), T.BOOL)
    out = drive(FilterExec(node, pred, 1.0), batches)
    assert_rows(out, duck("SELECT * FROM t WHERE a > 1", t=DATA), ordered=True)


def test_project_computes_expressions_with_repeated_names() -> None:
    node, batches = leaf(DATA)
    a, s = node.fields[0].ref(), node.fields[1].ref()
    plus = Call("add", (a, Literal(10, T.INT64)), T.INT64)
    fields = (Field.fresh("x", T.INT64), Field.fresh("x", T.STRING), Field.fresh("x", T.BOOL))
    out = drive(ProjectExec(node, (plus, s, Call("is_null", (a,), T.BOOL)), fields, 1.0),
                batches)
    assert out.column_names == ["x", "x", "x"]
    assert_rows(out, duck("SELECT a + 10, s, a IS NULL FROM t", t=DATA), ordered=True)


def test_project_without_columns_keeps_row_count() -> None:
    node, batches = leaf(DATA)
    out = drive(ProjectExec(node, (), (), 1.0), batches)
    assert out.num_rows == DATA.num_rows and out.num_columns == 0


@pytest.mark.parametrize(("limit", "offset"), [(3, 0), (2, 3), (None, 5), (0, 0), (10, 7)])
def test_limit_offset(limit: int | None, offset: int) -> None:
    node, batches = leaf(DATA)
    out = drive(LimitExec(node, limit, offset, 1.0), batches)
    expected = DATA.slice(offset, limit if limit is not None else None)
    assert out.to_pydict() == expected.to_pydict()


def test_limit_reports_satisfied() -> None:
    from flowsql.runtime.registry import create_operator

    node, batches = leaf(DATA)
    operator = create_operator(LimitExec(node, 3, 1, 1.0))
    emitted = [b for batch in batches[:2] for b in operator.process_batch(0, batch)]
    assert sum(b.num_rows for b in emitted) == 3
    assert operator.satisfied


ORDERINGS = [
    ((0, True, False),), ((0, False, True),), ((1, True, True), (0, False, False)),
    ((2, False, False), (1, True, False)), ((2, True, True), (0, True, True)),
]


def _keys(node: ValuesExec, spec: tuple[tuple[int, bool, bool], ...]) -> tuple[SortKey, ...]:
    return tuple(SortKey(node.fields[i].ref(), asc, nf) for i, asc, nf in spec)


def _order_sql(spec: tuple[tuple[int, bool, bool], ...]) -> str:
    return ", ".join(f"{'asm'[i]} {'ASC' if asc else 'DESC'} NULLS {'FIRST' if nf else 'LAST'}"
                     for i, asc, nf in spec)


@pytest.mark.parametrize("spec", ORDERINGS)
def test_sort_orders_like_duckdb(spec: tuple[tuple[int, bool, bool], ...]) -> None:
    node, batches = leaf(DATA)
    keys = _keys(node, spec)
    out = drive(SortExec(node, keys, 1.0), batches)
    expected = duck(f"SELECT * FROM t ORDER BY {_order_sql(spec)}", t=DATA)
    # rows equal on every key may come in any order; compare the key columns in order
    positions = [i for i, _, _ in spec]
    assert [out.column(i).to_pylist() for i in positions] == \
        [expected.column(i).to_pylist() for i in positions]
    assert_rows(out, expected)


@pytest.mark.parametrize("spec", ORDERINGS)
@pytest.mark.parametrize(("limit", "offset"), [(3, 0), (2, 2), (20, 0), (0, 1)])
def test_top_n_equals_sort_then_limit(spec: tuple[tuple[int, bool, bool], ...], limit: int,
                                      offset: int) -> None:
    node, batches = leaf(DATA, chunk=1)
    keys = _keys(node, spec)
    # a tie-breaking last key makes the chosen rows unique
    out = drive(TopNExec(node, (*keys, SortKey(node.fields[0].ref()),
                                SortKey(node.fields[1].ref()), SortKey(node.fields[2].ref())),
                         limit, offset, 1.0), batches)
    expected = duck(f"SELECT * FROM t ORDER BY {_order_sql(spec)}, a, s, m "
                    f"LIMIT {limit} OFFSET {offset}", t=DATA)
    assert_rows(out, expected, ordered=True)
