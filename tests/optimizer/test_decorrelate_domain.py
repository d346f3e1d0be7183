"""The domain rewrite: subqueries that pull-up cannot decorrelate (a non-equality below an
aggregate, an outer column in a select list or aggregate argument, a LIMIT) still become
joins, the plan joins back on NULL-safe hash keys, and the rows equal DuckDB's answer for
the original subquery plan on tables whose correlation columns hold NULLs."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.errors import PlanError
from flowsql.optimizer import optimize
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.decorrelation.null_safe import null_safe_equal
from flowsql.optimizer.deep import subquery_exprs
from flowsql.optimizer.physical_planner import to_physical
from flowsql.optimizer.rules.decorrelate_subqueries import decorrelate_subqueries
from flowsql.planner import types as T
from flowsql.planner.expressions import Call, ColumnRef, Expr
from flowsql.planner.logical import Aggregate, Join, LogicalPlan, Window, walk_plan
from flowsql.planner.physical import HashJoinExec, PhysicalPlan

from .oracle import assert_optimized_same
from .planbuilder import (
    agg,
    aggregate,
    and_,
    call,
    col,
    eq,
    exists,
    filter_,
    gt,
    in_,
    join,
    limit,
    lit,
    not_,
    or_,
    project,
    scalar,
    scan,
    select,
    sort,
)


def decorrelate(plan: LogicalPlan) -> LogicalPlan:
    result = decorrelate_subqueries(plan, OptimizerContext())
    assert next(subquery_exprs(result), None) is None
    assert [f.cid for f in result.schema] == [f.cid for f in plan.schema]
    return result


def physical_nodes(plan: PhysicalPlan) -> list[PhysicalPlan]:
    return [plan, *(n for child in plan.inputs for n in physical_nodes(child))]


def kinds(plan: LogicalPlan) -> list[str]:
    return [n.kind for n in walk_plan(plan) if isinstance(n, Join)]


def lt(a: Expr, b: Expr) -> Call:
    return call("lt", a, b)


def lte(a: Expr, b: Expr) -> Call:
    return call("lte", a, b)


def neq(a: Expr, b: Expr) -> Call:
    return call("neq", a, b)


def test_count_below_non_equality_in_select_list(oracle, t, u):
    """SELECT a, (SELECT count(*) FROM u WHERE y < t.b) FROM t -- NULL b, empty groups."""
    outer = scan(t)
    inner = scan(u)
    counted = aggregate(filter_(inner, lt(col(inner, "y"), col(outer, "b"))), [],
                        n=agg("count_star"))
    plan = project(outer, a=col(outer, "a"), n=scalar(select(counted, "n")))
    result = decorrelate(plan)
    # join back (left), repair empty groups (left), join the domain to u (inner)
    assert kinds(result) == ["left", "left", "inner"]
    domains = [n for n in walk_plan(result) if isinstance(n, Aggregate) and not n.aggs]
    assert domains, "the subquery is evaluated per distinct outer value"
    assert_optimized_same(oracle, plan)


def test_join_back_is_a_hash_join_on_null_safe_keys(t, u):
    outer = scan(t)
    inner = scan(u)
    counted = aggregate(filter_(inner, lt(col(inner, "y"), col(outer, "b"))), [],
                        n=agg("count_star"))
    plan = project(outer, a=col(outer, "a"), n=scalar(select(counted, "n")))
    physical = to_physical(optimize(plan).plan)
    hash_joins = [n for n in physical_nodes(physical) if isinstance(n, HashJoinExec)]
    assert len(hash_joins) == 2
    assert all(len(j.left_keys) == 2 for j in hash_joins)


@pytest.mark.parametrize("op", ["lt", "lte", "neq", "gt"])
@pytest.mark.parametrize("fn", ["count_star", "count", "sum", "max"])
def test_aggregate_below_inequality_in_where(oracle, t, u, op, fn):
    outer = scan(t)
    inner = scan(u)
    args = () if fn == "count_star" else (col(inner, "x"),)
    summed = aggregate(filter_(inner, call(op, col(inner, "y"), col(outer, "b"))), [],
                       v=agg(fn, *args))
    plan = select(filter_(outer, gt(add_one(col(outer, "a")), scalar(select(summed, "v")))),
                  "a", "b")
    decorrelate(plan)
    assert_optimized_same(oracle, plan)


def add_one(e: Expr) -> Expr:
    return call("add", e, lit(1), dtype=T.INT64)


def test_mixed_equality_and_inequality(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    pred = and_(eq(col(inner, "z"), col(outer, "s")), lte(col(inner, "x"), col(outer, "a")))
    summed = aggregate(filter_(inner, pred), [], total=agg("sum", col(inner, "y")),
                       n=agg("count", col(inner, "y")))
    value = project(summed, v=call("add", col(summed, "total"), col(summed, "n"),
                                   dtype=T.INT64))
    plan = project(outer, a=col(outer, "a"), s=col(outer, "s"), v=scalar(value))
    decorrelate(plan)
    assert_optimized_same(oracle, plan)


def test_scalar_in_having(oracle, t, u):
    """HAVING count(*) > (SELECT count(*) FROM u WHERE x <> t.s_group)."""
    outer = scan(t)
    grouped = aggregate(outer, ["a"], n=agg("count_star"))
    inner = scan(u)
    counted = aggregate(filter_(inner, neq(col(inner, "x"), col(grouped, "a"))), [],
                        m=agg("count_star"))
    plan = filter_(grouped, gt(add_one(col(grouped, "n")), scalar(select(counted, "m"))))
    decorrelate(plan)
    assert_optimized_same(oracle, plan)


def test_exists_over_grouped_aggregate_with_inequality(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    grouped = aggregate(filter_(inner, lt(col(inner, "y"), col(outer, "b"))), ["z"],
                        n=agg("count_star"))
    sub = filter_(grouped, gt(col(grouped, "n"), lit(1)))
    for negated in (False, True):
        pred = not_(exists(sub)) if negated else exists(sub)
        plan = select(filter_(outer, pred), "a", "b")
        assert kinds(decorrelate(plan))[0] == ("anti" if negated else "semi")
        assert_optimized_same(oracle, plan)


def test_in_and_not_in_over_grouped_aggregate_with_inequality(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    grouped = aggregate(filter_(inner, lt(col(inner, "y"), col(outer, "b"))), ["x"],
                        n=agg("count_star"))
    sub = select(grouped, "x")
    for pred in (in_(col(outer, "a"), sub), not_(in_(col(outer, "a"), sub))):
        plan = select(filter_(outer, pred), "a")
        decorrelate(plan)
        assert_optimized_same(oracle, plan)
    marked = project(outer, a=col(outer, "a"), hit=in_(col(outer, "a"), sub))
    decorrelate(marked)
    assert_optimized_same(oracle, marked)


def test_exists_under_or_with_inequality_below_aggregate(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    grouped = aggregate(filter_(inner, gt(col(inner, "y"), col(outer, "b"))), ["z"],
                        n=agg("count_star"))
    pred = or_(exists(grouped), eq(col(outer, "s"), lit("x")))
    plan = select(filter_(outer, pred), "a", "s")
    assert "mark" in kinds(decorrelate(plan))
    assert_optimized_same(oracle, plan)


def test_outer_column_in_select_list_and_aggregate_argument(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    shifted = project(inner, v=call("add", col(inner, "x"), col(outer, "a"), dtype=T.INT64))
    plan = select(filter_(outer, in_(col(outer, "b"), shifted)), "a", "b")
    decorrelate(plan)
    assert_optimized_same(oracle, plan)
    weighted = aggregate(filter_(inner, eq(col(inner, "z"), col(outer, "s"))), [],
                         w=agg("sum", call("multiply", col(inner, "y"), col(outer, "a"),
                                           dtype=T.INT64)))
    plan = project(outer, a=col(outer, "a"), w=scalar(select(weighted, "w")))
    decorrelate(plan)
    assert_optimized_same(oracle, plan)


def test_nested_two_levels(oracle, t, u, v):
    """SELECT a, (SELECT count(*) FROM u WHERE y < t.b
                  AND x > (SELECT min(k) FROM v WHERE w > u.y + t.a)) FROM t"""
    outer = scan(t)
    middle = scan(u)
    inner = scan(v)
    innermost = aggregate(filter_(inner, gt(col(inner, "w"),
                                            call("add", col(middle, "y"), col(outer, "a"),
                                                 dtype=T.INT64))), [],
                          m=agg("min", col(inner, "k")))
    pred = and_(lt(col(middle, "y"), col(outer, "b")),
                gt(col(middle, "x"), scalar(select(innermost, "m"))))
    counted = aggregate(filter_(middle, pred), [], n=agg("count_star"))
    plan = project(outer, a=col(outer, "a"), n=scalar(select(counted, "n")))
    decorrelate(plan)
    assert_optimized_same(oracle, plan)


def test_correlated_join_sides(oracle, t, u, v):
    """Both inputs of a join (and a left join's null-supplying side) read the outer row."""
    outer = scan(t)
    left = scan(u)
    right = scan(v)
    both = join(filter_(left, lt(col(left, "y"), col(outer, "b"))),
                filter_(right, gt(col(right, "w"), col(outer, "b"))), "inner",
                eq(col(left, "x"), col(right, "k")))
    counted = aggregate(both, [], n=agg("count_star"))
    plan = project(outer, a=col(outer, "a"), n=scalar(select(counted, "n")))
    decorrelate(plan)
    assert_optimized_same(oracle, plan)
    outer_join = join(left, right, "left", and_(eq(col(left, "x"), col(right, "k")),
                                                lt(col(right, "w"), col(outer, "b"))))
    counted = aggregate(outer_join, [], n=agg("count", col(right, "w")))
    plan = project(outer, a=col(outer, "a"), n=scalar(select(counted, "n")))
    decorrelate(plan)
    assert_optimized_same(oracle, plan)


def test_limit_becomes_row_number_per_outer_value(t, u):
    outer = scan(t)
    inner = scan(u)
    first = limit(sort(filter_(inner, eq(col(inner, "x"), col(outer, "a"))), "y"), 1)
    plan = project(outer, a=col(outer, "a"), y=scalar(select(first, "y")))
    result = decorrelate(plan)
    windows = [n for n in walk_plan(result) if isinstance(n, Window)]
    assert len(windows) == 1 and windows[0].calls[0].name == "row_number"
    assert [k.expr.name for k in windows[0].calls[0].order_by] == ["y"]  # type: ignore


def test_correlated_full_join_is_rejected(t, u, v):
    outer = scan(t)
    left = scan(u)
    right = scan(v)
    full = join(left, right, "full", and_(eq(col(left, "x"), col(right, "k")),
                                          lt(col(right, "w"), col(outer, "b"))))
    counted = aggregate(full, [], n=agg("count_star"))
    plan = project(outer, a=col(outer, "a"), n=scalar(select(counted, "n")))
    with pytest.raises(PlanError, match="FULL join"):
        decorrelate(plan)


def test_null_safe_equal_shapes():
    a, b = ColumnRef(1, "a", T.INT64), ColumnRef(2, "b", T.INT64)
    assert [p.name for p in null_safe_equal(a, b, nullable=False)] == ["eq"]  # type: ignore
    spelled = null_safe_equal(a, b, nullable=True)
    assert [p.name for p in spelled] == ["eq", "eq"]  # type: ignore
    # no constant to stand in for NULL: the plain (nested-loop) spelling
    c, d = ColumnRef(3, "c", pa.timestamp("us")), ColumnRef(4, "d", pa.timestamp("us"))
    assert [p.name for p in null_safe_equal(c, d, True)] == [  # type: ignore
        "is_not_distinct_from"]
