"""Predicates move into scans and join conditions, never where they would change results."""

from __future__ import annotations

from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.rules.push_down_filter import push_down_filter
from flowsql.planner.expressions import render
from flowsql.planner.logical import Filter, Join, LogicalPlan, Scan, walk_plan

from .oracle import assert_optimized_same
from .planbuilder import (
    agg,
    aggregate,
    and_,
    col,
    cross,
    eq,
    filter_,
    gt,
    join,
    lit,
    or_,
    scan,
    select,
)

SETTINGS = {"optimizer.disable-rules": "reorder_joins,prune_columns"}


def push(plan: LogicalPlan) -> LogicalPlan:
    return push_down_filter(plan, OptimizerContext())


def nodes(plan: LogicalPlan, kind: type) -> list:
    return [n for n in walk_plan(plan) if isinstance(n, kind)]


def test_cross_join_with_where_equality_becomes_inner_join(oracle, t, u):
    a, b = scan(t), scan(u)
    plan = filter_(cross(a, b), and_(eq(col(a, "a"), col(b, "x")), gt(col(b, "y"), lit(5))))
    result = push(plan)
    assert isinstance(result, Join) and result.kind == "inner"
    assert render(result.condition) == "(a = x)"
    assert [render(f) for f in nodes(result, Scan)[1].filters] == ["(y > 5)"]
    assert not nodes(result, Filter)
    assert_optimized_same(oracle, plan, SETTINGS)


def test_left_join_where_goes_only_to_preserved_side(oracle, t, u):
    a, b = scan(t), scan(u)
    j = join(a, b, "left", eq(col(a, "a"), col(b, "x")))
    plan = filter_(j, and_(gt(col(a, "b"), lit(15)), or_(gt(col(b, "y"), lit(10)),
                                                         eq(col(a, "s"), lit("x")))))
    result = push(plan)
    left_scan, right_scan = nodes(result, Scan)
    assert [render(f) for f in left_scan.filters] == ["(b > 15)"]
    assert right_scan.filters == ()
    assert isinstance(result, Filter)  # the predicate over the null-supplying side stays
    assert_optimized_same(oracle, plan, SETTINGS)


def test_left_join_on_clause_filters_only_null_supplying_side(oracle, t, u):
    a, b = scan(t), scan(u)
    cond = and_(eq(col(a, "a"), col(b, "x")), gt(col(b, "y"), lit(10)), gt(col(a, "b"), lit(15)))
    plan = join(a, b, "left", cond)
    result = push(plan)
    left_scan, right_scan = nodes(result, Scan)
    assert left_scan.filters == ()
    assert [render(f) for f in right_scan.filters] == ["(y > 10)"]
    assert "(b > 15)" in render(result.condition)
    assert_optimized_same(oracle, plan, SETTINGS)


def test_full_join_keeps_everything_in_place(oracle, t, u):
    a, b = scan(t), scan(u)
    plan = filter_(join(a, b, "full", eq(col(a, "a"), col(b, "x"))), gt(col(a, "b"), lit(15)))
    result = push(plan)
    assert isinstance(result, Filter)
    scans = nodes(result, Scan)
    assert len(scans) == 2 and all(s.filters == () for s in scans)
    assert_optimized_same(oracle, plan, SETTINGS)


def test_through_aggregate_only_on_group_columns(oracle, t):
    a = scan(t)
    grouped = aggregate(a, ["s"], n=agg("count_star"))
    plan = filter_(grouped, and_(eq(col(grouped, "s"), lit("x")), gt(col(grouped, "n"), lit(1))))
    result = push(plan)
    assert render(result.predicate) == "(n > 1)"
    assert [render(f) for f in nodes(result, Scan)[0].filters] == ["(s = 'x')"]
    assert_optimized_same(oracle, plan, SETTINGS)


def test_never_below_aggregate_without_groups(oracle, t):
    a = scan(t)
    total = aggregate(a, [], n=agg("count_star"))
    plan = filter_(total, lit(False))
    result = push(plan)
    assert isinstance(result, Filter)
    assert nodes(result, Scan)[0].filters == ()
    assert_optimized_same(oracle, plan, SETTINGS)


def test_through_project_substitutes_expressions(oracle, t):
    a = scan(t)
    projected = select(a, "a", "b")
    plan = filter_(projected, gt(col(projected, "b"), lit(20)))
    result = push(plan)
    assert [render(f) for f in nodes(result, Scan)[0].filters] == ["(b > 20)"]
    assert not nodes(result, Filter)
    assert_optimized_same(oracle, plan, SETTINGS)
