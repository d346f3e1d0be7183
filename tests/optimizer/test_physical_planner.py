"""Hash joins get equi-keys (cast to a common type), the smaller build side, residuals;
Sort + Limit becomes TopN; every node carries an estimate."""

from __future__ import annotations

import pyarrow as pa

from flowsql.optimizer import optimize, to_physical
from flowsql.planner import types as T
from flowsql.planner.expressions import Cast, render
from flowsql.planner.physical import (
    HashJoinExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    TopNExec,
)

from .planbuilder import and_, call, col, cross, eq, filter_, gt, join, limit, scan, sort, table


def physical_nodes(plan: PhysicalPlan) -> list[PhysicalPlan]:
    out = [plan]
    for child in plan.inputs:
        out.extend(physical_nodes(child))
    return out


def test_hash_join_keys_residual_and_build_side():
    big = scan(table("big", 1000, k=T.INT64, v=T.INT64))
    small = scan(table("small", 10, k=T.INT32, w=T.INT64))
    cond = and_(eq(col(big, "k"), Cast(col(small, "k"), T.INT64)),
                call("neq", col(big, "v"), col(small, "w")))
    plan = join(big, small, "inner", cond)
    node = to_physical(plan, {})
    assert isinstance(node, HashJoinExec)
    assert node.build_side == "right"
    assert [render(k) for k in node.left_keys] == ["k"]
    assert render(node.residual) == "(v <> w)"


def test_keys_of_different_types_are_cast_to_common_type():
    a = scan(table("a", 10, k=T.INT32))
    b = scan(table("b", 1000, k=pa.decimal128(12, 2)))
    node = to_physical(join(a, b, "inner", eq(col(a, "k"), col(b, "k"))), {})
    assert isinstance(node, HashJoinExec)
    assert node.build_side == "left"
    assert node.left_keys[0].dtype.equals(node.right_keys[0].dtype)
    assert isinstance(node.left_keys[0], Cast)


def test_join_without_equality_is_nested_loop():
    a = scan(table("a", 10, x=T.INT64))
    b = scan(table("b", 10, y=T.INT64))
    node = to_physical(join(a, b, "left", gt(col(a, "x"), col(b, "y"))), {})
    assert isinstance(node, NestedLoopJoinExec) and node.kind == "left"


def test_sort_then_limit_is_top_n_and_every_node_has_rows():
    a = scan(table("a", 100, x=T.INT64))
    b = scan(table("b", 100, y=T.INT64))
    plan = limit(sort(filter_(cross(a, b), eq(col(a, "x"), col(b, "y"))), "x"), 5)
    node = to_physical(optimize(plan).plan, {})
    assert isinstance(node, TopNExec) and node.limit == 5
    assert all(n.est_rows >= 0 for n in physical_nodes(node))
    assert node.est_rows == 5
