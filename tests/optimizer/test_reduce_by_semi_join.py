"""A grouped subquery is reduced to the keys the outer side can match, and only then."""

from __future__ import annotations

import sqlglot

from flowsql.optimizer import optimize
from flowsql.planner import types as T
from flowsql.planner.catalog import Catalog
from flowsql.planner.logical import Join, LogicalPlan, Window, walk_plan
from flowsql.sql.bind_query import QueryBinder
from flowsql.sql.dialect import DIALECT

from .oracle import assert_optimized_same
from .planbuilder import agg, aggregate, col, eq, filter_, join, lit, scan, table

# The oracle's tables under large row counts: the estimates make the reduction pay off,
# the rows stay the oracle's (NULLs included).
T_BIG = table("t", 1_000_000, a=T.INT64, b=T.INT64, s=T.STRING)
U_BIG = table("u", 1_000_000, x=T.INT64, y=T.INT64, z=T.STRING)
V_BIG = table("v", 1_000_000, k=T.INT64, w=T.INT64)


def _semi_joins(plan: LogicalPlan) -> list[Join]:
    return [j for j in walk_plan(plan) if isinstance(j, Join) and j.kind == "semi"]


def _outer_and_grouped() -> tuple[LogicalPlan, LogicalPlan]:
    outer_scan = scan(T_BIG)
    outer = filter_(outer_scan, eq(col(outer_scan, "s"), lit("x")))
    inner = scan(U_BIG)
    grouped = aggregate(inner, ["x"], m=agg("max", col(inner, "y")))
    return outer, grouped


def test_left_join_to_grouped_subquery_reduces_its_scan(oracle):
    outer, grouped = _outer_and_grouped()
    plan = join(outer, grouped, "left", eq(col(outer, "a"), col(grouped, "x")))
    optimized = assert_optimized_same(oracle, plan)
    semis = _semi_joins(optimized)
    assert len(semis) == 1
    # the reducer is a copy of the outer scan with its filter, below the aggregate
    reducer = semis[0].right
    assert [str(f) for f in reducer.filters] == ["(s = 'x')"]  # type: ignore[attr-defined]
    assert semis[0].left.table.name == "u"  # type: ignore[attr-defined]


def test_inner_join_reduces_either_side(oracle):
    outer, grouped = _outer_and_grouped()
    plan = join(grouped, outer, "inner", eq(col(grouped, "x"), col(outer, "a")))
    optimized = assert_optimized_same(oracle, plan)
    assert len(_semi_joins(optimized)) == 1


def test_preserved_side_is_never_reduced(oracle):
    """grouped LEFT JOIN outer keeps every group: nothing may be removed from it."""
    outer, grouped = _outer_and_grouped()
    plan = join(grouped, outer, "left", eq(col(grouped, "x"), col(outer, "a")))
    optimized = assert_optimized_same(oracle, plan)
    assert not _semi_joins(optimized)


def test_unfiltered_outer_scan_gives_no_reducer(oracle):
    outer = scan(T_BIG)
    inner = scan(U_BIG)
    grouped = aggregate(inner, ["x"], m=agg("max", col(inner, "y")))
    plan = join(outer, grouped, "left", eq(col(outer, "a"), col(grouped, "x")))
    assert not _semi_joins(assert_optimized_same(oracle, plan))


def _outer_joined_to_filtered_v(kind: str) -> LogicalPlan:
    """``t`` (no filter of its own) joined by ``kind`` to the ``v`` rows with w = 200, on
    a = k, then left-joined to ``max(y)`` of ``u`` grouped by x, on a = x."""
    t_scan, v_scan = scan(T_BIG), scan(V_BIG)
    filtered_v = filter_(v_scan, eq(col(v_scan, "w"), lit(200)))
    outer = join(t_scan, filtered_v, kind, eq(col(t_scan, "a"), col(filtered_v, "k")))
    inner = scan(U_BIG)
    grouped = aggregate(inner, ["x"], m=agg("max", col(inner, "y")))
    return join(outer, grouped, "left", eq(col(outer, "a"), col(grouped, "x")))


def test_reducer_found_through_a_semi_join_of_the_outer_key(oracle):
    """TPC-H Q20's shape: the outer key's scan has no filter, but a semi join keeps only
    keys equal to a filtered scan's column; a copy of that scan reduces the aggregate."""
    optimized = assert_optimized_same(oracle, _outer_joined_to_filtered_v("semi"))
    below_aggregate = [j for j in _semi_joins(optimized)
                       if j.left.table.name == "u"]  # type: ignore[attr-defined]
    assert len(below_aggregate) == 1
    reducer = below_aggregate[0].right
    assert reducer.table.name == "v"  # type: ignore[attr-defined]
    assert [str(f) for f in reducer.filters] == ["(w = 200)"]  # type: ignore[attr-defined]


def test_no_reducer_through_a_left_join_of_the_outer_key(oracle):
    """A LEFT join keeps every outer key, matched in ``v`` or not: nothing restricts them."""
    optimized = assert_optimized_same(oracle, _outer_joined_to_filtered_v("left"))
    assert not _semi_joins(optimized)


def test_not_applied_when_the_cost_model_finds_it_dearer():
    """A tiny grouped input: a semi join costs more than the rows it could remove."""
    outer_scan = scan(T_BIG)
    outer = filter_(outer_scan, eq(col(outer_scan, "s"), lit("x")))
    inner = scan(table("u", 10, x=T.INT64, y=T.INT64, z=T.STRING))
    grouped = aggregate(inner, ["x"], m=agg("max", col(inner, "y")))
    plan = join(outer, grouped, "left", eq(col(outer, "a"), col(grouped, "x")))
    assert not _semi_joins(optimize(plan).plan)


def test_sql_correlated_subquery_is_reduced(oracle):
    """The TPC-H Q17 shape through the binder and decorrelation."""
    catalog = Catalog()
    catalog.add(T_BIG)
    catalog.add(U_BIG)
    sql = ("SELECT a, b FROM t WHERE s = 'x' AND b > "
           "(SELECT avg(y) FROM u WHERE u.x = t.a)")
    plan = QueryBinder(catalog, sql).bind(sqlglot.parse_one(sql, read=DIALECT))
    optimized = assert_optimized_same(oracle, plan)
    assert len(_semi_joins(optimized)) == 1
    assert not [n for n in walk_plan(optimized) if isinstance(n, Window)]


def test_streaming_plans_get_no_semi_join():
    """A streaming semi join must be a window join: the reduction would make the plan fail."""
    outer, grouped = _outer_and_grouped()
    plan = join(outer, grouped, "left", eq(col(outer, "a"), col(grouped, "x")))
    optimized = optimize(plan, {"execution.runtime-mode": "streaming"}).plan
    assert not _semi_joins(optimized)
