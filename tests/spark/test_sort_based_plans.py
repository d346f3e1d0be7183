"""Sort-merge joins and sort aggregates on Spark (a plain join and a groupBy there) against
DuckDB, over the shared data set: keys with NULLs on both sides, residuals, two keys."""

from __future__ import annotations

import pytest

from flowsql.planner.expressions import Expr
from flowsql.planner.physical import PhysicalPlan, SortAggregateExec, SortMergeJoinExec
from flowsql.planner.schema import Field
from flowsql.spark import generate_pyspark_source
from tests.harness.merge_plans import sorted_on

from .builders import agg, call, col, lit, project, scan
from .compare import check

RESIDUAL_SQL = "u.w < t.price"


def merge_join(left: PhysicalPlan, right: PhysicalPlan, kind: str, residual: bool,
               keys: tuple[str, ...] = ("k",)) -> SortMergeJoinExec:
    condition = call("lt", col(right, "w"), col(left, "price")) if residual else None
    lkeys = tuple(col(left, k) for k in keys)
    rkeys = tuple(col(right, k) for k in keys)
    return SortMergeJoinExec(sorted_on(left, lkeys), sorted_on(right, rkeys), kind, lkeys,
                             rkeys, condition, 20.0)


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("kind", ["inner", "left", "right", "full"])
def test_merge_joins(tables, duck, kind: str, residual: bool) -> None:  # type: ignore[no-untyped-def]
    t, u = scan(tables["t"]), scan(tables["u"])
    plan = project(merge_join(t, u, kind, residual), ("id", col(t, "id")), ("tk", col(t, "k")),
                   ("v", col(u, "v")))
    on = "t.k = u.k" + (f" AND {RESIDUAL_SQL}" if residual else "")
    check(plan, duck, f"SELECT t.id, t.k, u.v FROM t {kind.upper()} JOIN u ON {on}")


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("kind", ["semi", "anti"])
def test_merge_semi_and_anti_joins(tables, duck, kind: str, residual: bool) -> None:  # type: ignore[no-untyped-def]
    t, u = scan(tables["t"]), scan(tables["u"])
    on = "t.k = u.k" + (f" AND {RESIDUAL_SQL}" if residual else "")
    check(merge_join(t, u, kind, residual), duck, f"SELECT t.* FROM t {kind.upper()} JOIN u ON {on}")


def test_merge_join_on_two_keys_with_strings(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t, u = scan(tables["t"]), scan(tables["u"])
    renamed = project(u, ("k", col(u, "k")), ("grp", col(u, "v")), ("w", col(u, "w")))
    plan = project(merge_join(t, renamed, "left", False, ("k", "grp")), ("id", col(t, "id")),
                   ("w", col(renamed, "w")))
    check(plan, duck, "SELECT t.id, u.w FROM t LEFT JOIN u ON t.k = u.k AND t.grp = u.v")


def test_sort_aggregate_is_a_group_by(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t = scan(tables["t"])
    keys: tuple[Expr, ...] = (col(t, "grp"), col(t, "k"))
    calls = (agg("count_star"), agg("sum", col(t, "price")),
             agg("count", col(t, "qty"), distinct=True),
             agg("sum", col(t, "qty"), filter=call("gt", col(t, "x"), lit(1.0, col(t, "x").dtype))))
    fields = tuple(Field.fresh(f"a{i}", a.dtype) for i, a in enumerate(calls))
    groups = tuple(Field.fresh(n, k.dtype) for n, k in zip(("grp", "k"), keys))
    plan = SortAggregateExec(sorted_on(t, keys), keys, groups, calls, fields, 10.0)
    check(plan, duck, "SELECT grp, k, count(*), sum(price), count(DISTINCT qty), "
                      "sum(qty) FILTER (WHERE x > 1.0) FROM t GROUP BY grp, k")
    source = generate_pyspark_source(plan)
    assert ".groupBy(" in source
    no_keys = SortAggregateExec(t, (), (), calls[:2], fields[:2], 1.0)
    check(no_keys, duck, "SELECT count(*), sum(price) FROM t")
