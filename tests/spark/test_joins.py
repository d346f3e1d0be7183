"""Every join kind against DuckDB, on keys with NULLs on both sides and with residuals."""

from __future__ import annotations

import pytest

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.physical import (
    HashAggregateExec,
    HashJoinExec,
    NestedLoopJoinExec,
    PhysicalPlan,
)
from flowsql.planner.schema import Field
from flowsql.spark import generate_pyspark_source

from .builders import agg, call, col, project, scan
from .compare import check, run

RESIDUAL_SQL = "u.w < t.price"


def hash_join(left: PhysicalPlan, right: PhysicalPlan, kind: str, residual: bool = False,
              build_side: str = "right", **extra: object) -> HashJoinExec:
    condition = call("lt", col(right, "w"), col(left, "price")) if residual else None
    return HashJoinExec(left, right, kind, (col(left, "k"),), (col(right, "k"),), condition,
                        build_side, 20.0, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("kind", ["inner", "left", "right", "full"])
def test_outer_and_inner_joins(tables, duck, kind: str, residual: bool) -> None:  # type: ignore[no-untyped-def]
    t, u = scan(tables["t"]), scan(tables["u"])
    join = hash_join(t, u, kind, residual)
    plan = project(join, ("id", col(t, "id")), ("tk", col(t, "k")), ("v", col(u, "v")))
    on = "t.k = u.k" + (f" AND {RESIDUAL_SQL}" if residual else "")
    check(plan, duck, f"SELECT t.id, t.k, u.v FROM t {kind.upper()} JOIN u ON {on}")


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("kind", ["semi", "anti"])
def test_semi_and_anti_joins(tables, duck, kind: str, residual: bool) -> None:  # type: ignore[no-untyped-def]
    t, u = scan(tables["t"]), scan(tables["u"])
    plan = hash_join(t, u, kind, residual)
    on = "t.k = u.k" + (f" AND {RESIDUAL_SQL}" if residual else "")
    check(plan, duck, f"SELECT t.* FROM t {kind.upper()} JOIN u ON {on}")


@pytest.mark.parametrize("right,residual", [("u", False), ("v", False), ("u", True),
                                            ("v", True)])
def test_null_aware_anti_join_is_not_in(tables, duck, right: str, residual: bool) -> None:  # type: ignore[no-untyped-def]
    t, r = scan(tables["t"]), scan(tables[right])
    if residual and right == "v":
        condition = call("neq", col(r, "label"), col(t, "s"))
        where, plan_residual = "WHERE v.label <> t.s", condition
    elif residual:
        where, plan_residual = f"WHERE {RESIDUAL_SQL}", call("lt", col(r, "w"), col(t, "price"))
    else:
        where, plan_residual = "", None
    plan = HashJoinExec(t, r, "anti", (col(t, "k"),), (col(r, "k"),), plan_residual, "right",
                        10.0, null_aware=True)
    result = check(plan, duck, f"SELECT * FROM t WHERE k NOT IN (SELECT k FROM {right} {where})")
    if right == "u" and not residual:
        assert result.num_rows == 0  # a NULL in the subquery makes NOT IN never true


@pytest.mark.parametrize("null_aware,residual", [(False, False), (False, True), (True, False),
                                                 (True, True)])
def test_mark_join(tables, duck, null_aware: bool, residual: bool) -> None:  # type: ignore[no-untyped-def]
    t, u = scan(tables["t"]), scan(tables["u"])
    mark = Field.fresh("mark", T.BOOL)
    join = hash_join(t, u, "mark", residual, mark=mark, null_aware=null_aware)
    plan = project(join, ("id", col(t, "id")), ("mark", mark.ref()))
    where = f"WHERE {RESIDUAL_SQL}" if residual else ""
    if null_aware:
        sql = f"SELECT id, k IN (SELECT k FROM u {where}) FROM t"
    else:
        where = "WHERE u.k = t.k" + (f" AND {RESIDUAL_SQL}" if residual else "")
        sql = f"SELECT id, EXISTS (SELECT 1 FROM u {where}) FROM t"
    result = check(plan, duck, sql)
    if null_aware:
        assert None in result.column("mark").to_pylist()


def test_single_join_is_a_scalar_subquery(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t, v = scan(tables["t"]), scan(tables["v"])
    join = HashJoinExec(t, v, "single", (col(t, "k"),), (col(v, "k"),), None, "right", 12.0)
    plan = project(join, ("id", col(t, "id")), ("label", col(v, "label")))
    check(plan, duck, "SELECT id, (SELECT label FROM v WHERE v.k = t.k) FROM t")


def test_single_join_over_a_global_aggregate_needs_no_check(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t, u = scan(tables["t"]), scan(tables["u"])
    top = agg("max", col(u, "w"))
    field = Field.fresh("top", top.dtype)
    right = HashAggregateExec(u, (), (), (top,), (field,), 1.0)
    join = NestedLoopJoinExec(t, right, "single", None, 12.0)
    plan = project(join, ("id", col(t, "id")), ("top", field.ref()))
    assert "_flowsql_row" not in generate_pyspark_source(plan)
    check(plan, duck, "SELECT id, (SELECT max(w) FROM u) FROM t")


def test_single_join_fails_on_two_matches(tables) -> None:  # type: ignore[no-untyped-def]
    t, u = scan(tables["t"]), scan(tables["u"])
    plan = hash_join(t, u, "single")
    with pytest.raises(ExecutionError, match="more than one row returned by a subquery") as info:
        run(plan)
    assert "\n" not in str(info.value) and "at org.apache" not in str(info.value)


@pytest.mark.parametrize("kind", ["inner", "left", "semi", "anti", "cross"])
def test_nested_loop_joins(tables, duck, kind: str) -> None:  # type: ignore[no-untyped-def]
    t = scan(tables["t"])
    right = scan(tables["v" if kind == "cross" else "u"])
    condition = None if kind == "cross" else call("lt", col(right, "w"), col(t, "price"))
    plan = NestedLoopJoinExec(t, right, kind, condition, 50.0)
    if kind == "cross":
        sql = "SELECT * FROM t CROSS JOIN v"
    else:
        cols = "t.*" if kind in ("semi", "anti") else "*"
        sql = f"SELECT {cols} FROM t {kind.upper()} JOIN u ON {RESIDUAL_SQL}"
    check(plan, duck, sql)


def test_broadcast_hint_follows_build_side_and_estimate(tables) -> None:  # type: ignore[no-untyped-def]
    t, u = scan(tables["t"]), scan(tables["u"], est_rows=10.0)
    small = HashJoinExec(t, u, "inner", (col(t, "k"),), (col(u, "k"),), None, "right", 10.0)
    assert "F.broadcast(df2)" in generate_pyspark_source(small)
    assert "F.broadcast" not in generate_pyspark_source(small, broadcast_rows=5)
    t, u = scan(tables["t"], est_rows=5.0), scan(tables["u"], est_rows=10.0)
    left_built = HashJoinExec(t, u, "inner", (col(t, "k"),), (col(u, "k"),), None, "left", 10.0)
    assert "F.broadcast(df1)" in generate_pyspark_source(left_built)
    # Spark cannot broadcast the preserved side of an outer join: no hint is written.
    outer = HashJoinExec(t, u, "left", (col(t, "k"),), (col(u, "k"),), None, "left", 10.0)
    assert "F.broadcast" not in generate_pyspark_source(outer)
