"""Scans read only the columns some node needs; the output schema never changes."""

from __future__ import annotations

from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.rules.prune_columns import prune_columns
from flowsql.planner.logical import Aggregate, Project, Scan, walk_plan

from .oracle import assert_optimized_same
from .planbuilder import agg, aggregate, col, eq, filter_, join, lit, scan, select


def scans(plan):
    return [n for n in walk_plan(plan) if isinstance(n, Scan)]


def test_scan_reads_only_needed_columns(oracle, t, u):
    a, b = scan(t), scan(u)
    plan = select(join(a, b, "inner", eq(col(a, "a"), col(b, "x"))), "s")
    result = prune_columns(plan, OptimizerContext())
    assert [f.cid for f in result.schema] == [f.cid for f in plan.schema]
    assert [[f.name for f in s.fields] for s in scans(result)] == [["a", "s"], ["x"]]
    assert_optimized_same(oracle, plan)


def test_count_star_keeps_one_column(oracle, t):
    a = scan(t)
    plan = aggregate(filter_(a, eq(col(a, "s"), lit("x"))), [], n=agg("count_star"))
    result = prune_columns(plan, OptimizerContext())
    assert [f.name for f in scans(result)[0].fields] == ["s"]
    plan2 = aggregate(a, [], n=agg("count_star"))
    assert len(scans(prune_columns(plan2, OptimizerContext()))[0].fields) == 1
    assert_optimized_same(oracle, plan2)


def test_unused_aggregates_and_passthrough_projects_go(oracle, t):
    a = scan(t)
    grouped = aggregate(a, ["s"], n=agg("count_star"), m=agg("max", col(a, "b")))
    inner = select(grouped, "s", "n")
    plan = select(inner, "n")
    result = prune_columns(plan, OptimizerContext())
    aggs = [n for n in walk_plan(result) if isinstance(n, Aggregate)]
    assert [f.name for f in aggs[0].agg_fields] == ["n"]
    assert [f.name for f in scans(result)[0].fields] == ["s"]
    assert sum(isinstance(n, Project) for n in walk_plan(result)) == 2
    assert_optimized_same(oracle, plan)
