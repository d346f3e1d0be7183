"""EXPLAIN text is deterministic: names not ids, one node per line, rounded estimates."""

from __future__ import annotations

from flowsql.optimizer import optimize, to_physical
from flowsql.planner import types as T
from flowsql.planner.explain import explain_logical, explain_physical

from .planbuilder import and_, col, cross, eq, exists, filter_, gt, lit, scan, select, table


def _plan():
    orders = scan(table("orders", 1500, o_orderkey=T.INT64, o_custkey=T.INT64))
    items = scan(table("lineitem", 6000, l_orderkey=T.INT64, l_qty=T.INT64))
    where = and_(eq(col(orders, "o_orderkey"), col(items, "l_orderkey")),
                 gt(col(items, "l_qty"), lit(30)))
    return select(filter_(cross(orders, items), where), "o_custkey", "l_qty")


def test_explain_logical_before_and_after():
    plan = _plan()
    assert explain_logical(plan) == "\n".join([
        "Project [o_custkey, l_qty]",
        "  Filter ((o_orderkey = l_orderkey) AND (l_qty > 30))",
        "    Join[cross]",
        "      Scan orders [o_orderkey, o_custkey]",
        "      Scan lineitem [l_orderkey, l_qty]",
    ])
    optimized = optimize(plan).plan
    assert explain_logical(optimized) == "\n".join([
        "Project [o_custkey, l_qty]",
        "  Join[inner] on (o_orderkey = l_orderkey)",
        "    Scan orders [o_orderkey, o_custkey]",
        "    Scan lineitem [l_orderkey, l_qty] filters=[(l_qty > 30)]",
    ])


def test_explain_physical_shows_algorithm_and_rows():
    physical = to_physical(optimize(_plan()).plan, {})
    assert explain_physical(physical) == "\n".join([
        "Project [o_custkey, l_qty] rows=~2000",
        "  HashJoin[inner, build=left] keys=[o_orderkey = l_orderkey] rows=~2000",
        "    TableScan orders [o_orderkey, o_custkey] stats=none rows=~1500",
        "    TableScan lineitem [l_orderkey, l_qty] filters=[(l_qty > 30)] stats=none rows=~2000",
    ])


def test_explain_logical_shows_subquery_plans(t, u):
    a, b = scan(t), scan(u)
    plan = filter_(a, exists(filter_(b, eq(col(b, "x"), col(a, "a")))))
    assert explain_logical(plan) == "\n".join([
        "Filter EXISTS(subquery)",
        "  Subquery EXISTS(subquery)",
        "    Filter (x = a)",
        "      Scan u [x, y, z]",
        "  Scan t [a, b, s]",
    ])
