"""Each subquery form becomes the expected join, no subquery remains, the schema stays,
and the rows equal DuckDB's answer for the original (subquery) plan on data with NULLs."""

from __future__ import annotations

from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.deep import subquery_exprs
from flowsql.optimizer.rules.decorrelate_subqueries import decorrelate_subqueries
from flowsql.planner import types as T
from flowsql.planner.logical import Join, LogicalPlan, walk_plan

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
    lit,
    not_,
    or_,
    project,
    scalar,
    scan,
    select,
)


def decorrelate(plan: LogicalPlan) -> LogicalPlan:
    result = decorrelate_subqueries(plan, OptimizerContext())
    assert next(subquery_exprs(result), None) is None
    assert [f.cid for f in result.schema] == [f.cid for f in plan.schema]
    return result


def joins(plan: LogicalPlan) -> list[Join]:
    return [n for n in walk_plan(plan) if isinstance(n, Join)]


def kinds(plan: LogicalPlan) -> list[str]:
    return [j.kind + ("/null_aware" if j.null_aware else "") for j in joins(plan)]


def test_exists_conjunct_is_semi_join(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    sub = select(filter_(inner, and_(eq(col(inner, "x"), col(outer, "a")),
                                     gt(col(inner, "y"), lit(5)))), "z")
    plan = select(filter_(outer, exists(sub)), "a", "s")
    assert kinds(decorrelate(plan)) == ["semi"]
    assert_optimized_same(oracle, plan)


def test_not_exists_with_non_equality_correlation_is_anti_join(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    sub = filter_(inner, and_(eq(col(inner, "x"), col(outer, "a")),
                              call("neq", col(inner, "y"), col(outer, "b"))))
    plan = select(filter_(outer, not_(exists(sub))), "a", "b")
    result = decorrelate(plan)
    assert kinds(result) == ["anti"]
    assert "<>" in str(joins(result)[0].condition)
    assert_optimized_same(oracle, plan)


def test_uncorrelated_exists_needs_one_row(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    plan = filter_(outer, exists(filter_(inner, gt(col(inner, "x"), lit(100)))))
    result = decorrelate(plan)
    assert kinds(result) == ["semi"]
    assert_optimized_same(oracle, plan)


def test_in_conjunct_is_semi_join(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    plan = filter_(outer, in_(col(outer, "a"), select(inner, "x")))
    assert kinds(decorrelate(plan)) == ["semi"]
    assert_optimized_same(oracle, plan)


def test_uncorrelated_not_in_is_null_aware_anti_join(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    sub = select(filter_(inner, gt(col(inner, "y"), lit(20))), "x")
    plan = filter_(outer, not_(in_(col(outer, "a"), sub)))
    assert kinds(decorrelate(plan)) == ["anti/null_aware"]
    assert_optimized_same(oracle, plan)


def test_not_in_over_non_nullable_columns_is_plain_anti_join(oracle, t, u):
    outer = scan(t, nullable=False)
    inner = scan(u, nullable=False)
    sub = select(filter_(inner, gt(col(inner, "y"), lit(20))), "x")
    plan = filter_(outer, not_(in_(col(outer, "a"), sub)))
    assert kinds(decorrelate(plan)) == ["anti"]


def test_correlated_not_in_spells_out_nulls(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    sub = select(filter_(inner, eq(col(inner, "z"), col(outer, "s"))), "x")
    plan = filter_(outer, not_(in_(col(outer, "a"), sub)))
    result = decorrelate(plan)
    assert kinds(result) == ["anti"]
    assert "IS NULL" in str(joins(result)[0].condition)
    assert_optimized_same(oracle, plan)


def test_in_under_or_is_null_aware_mark_join(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    pred = or_(in_(col(outer, "a"), select(inner, "x")), eq(col(outer, "s"), lit("y")))
    plan = select(filter_(outer, pred), "a", "s")
    assert kinds(decorrelate(plan)) == ["mark/null_aware"]
    assert_optimized_same(oracle, plan)


def test_in_in_select_list_keeps_three_valued_result(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    plan = project(outer, a=col(outer, "a"), hit=in_(col(outer, "a"), select(inner, "x")))
    assert kinds(decorrelate(plan)) == ["mark/null_aware"]
    assert_optimized_same(oracle, plan)


def test_correlated_in_in_select_list_uses_two_marks(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    sub = select(filter_(inner, eq(col(inner, "z"), col(outer, "s"))), "x")
    plan = project(outer, a=col(outer, "a"), hit=in_(col(outer, "a"), sub))
    assert kinds(decorrelate(plan)) == ["mark", "mark"]
    assert_optimized_same(oracle, plan)


def test_not_exists_under_or_is_mark_join(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    sub = filter_(inner, eq(col(inner, "x"), col(outer, "a")))
    pred = or_(not_(exists(sub)), gt(col(outer, "b"), lit(45)))
    plan = filter_(outer, pred)
    assert kinds(decorrelate(plan)) == ["mark"]
    assert_optimized_same(oracle, plan)


def test_uncorrelated_scalar_subquery_is_single_join(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    sub = select(aggregate(inner, [], m=agg("max", col(inner, "y"))), "m")
    plan = select(filter_(outer, gt(col(outer, "b"), scalar(sub))), "a")
    assert kinds(decorrelate(plan)) == ["single"]
    assert_optimized_same(oracle, plan)


def test_correlated_count_is_left_join_with_count_bug_fixed(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    counted = aggregate(filter_(inner, eq(col(inner, "x"), col(outer, "a"))), [],
                        n=agg("count_star"))
    plan = project(outer, a=col(outer, "a"), n=scalar(select(counted, "n")))
    assert kinds(decorrelate(plan)) == ["left"]
    assert_optimized_same(oracle, plan)


def test_correlated_count_plus_one_over_no_rows(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    counted = aggregate(filter_(inner, eq(col(inner, "x"), col(outer, "a"))), [],
                        n=agg("count", col(inner, "y")))
    value = project(counted, n1=call("add", col(counted, "n"), lit(1), dtype=T.INT64))
    plan = project(outer, a=col(outer, "a"), n1=scalar(value))
    assert kinds(decorrelate(plan)) == ["left"]
    assert_optimized_same(oracle, plan)


def test_correlated_sum_in_where(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    summed = aggregate(filter_(inner, eq(col(inner, "x"), col(outer, "a"))), [],
                       total=agg("sum", col(inner, "y")))
    plan = filter_(outer, gt(col(outer, "b"), scalar(select(summed, "total"))))
    assert kinds(decorrelate(plan)) == ["left"]
    assert_optimized_same(oracle, plan)


def test_correlated_scalar_without_aggregate_is_single_join(oracle, t, v):
    outer = scan(t)
    inner = scan(v)
    sub = select(filter_(inner, eq(col(inner, "k"), col(outer, "a"))), "w")
    plan = project(outer, a=col(outer, "a"), w=scalar(sub))
    assert kinds(decorrelate(plan)) == ["single"]
    assert_optimized_same(oracle, plan)


def test_correlated_grouped_subquery_in_in(oracle, t, u):
    """Correlation below a GROUP BY: the correlation column joins the grouping."""
    outer = scan(t)
    inner = scan(u)
    grouped = aggregate(filter_(inner, eq(col(inner, "z"), col(outer, "s"))), ["x"],
                        n=agg("count_star"))
    plan = filter_(outer, in_(col(outer, "a"), select(grouped, "x")))
    assert kinds(decorrelate(plan)) == ["semi"]
    assert_optimized_same(oracle, plan)


def test_nested_subqueries(oracle, t, u, v):
    """WHERE a IN (SELECT x FROM u WHERE EXISTS (SELECT * FROM v WHERE k = x AND w > b))."""
    outer = scan(t)
    middle = scan(u)
    inner = scan(v)
    innermost = filter_(inner, and_(eq(col(inner, "k"), col(middle, "x")),
                                    gt(col(inner, "w"), col(outer, "b"))))
    sub = select(filter_(middle, exists(innermost)), "x")
    plan = filter_(outer, in_(col(outer, "a"), sub))
    result = decorrelate(plan)
    # the inner EXISTS reads t.b: inside the outer IN it may become an inner join
    assert sorted(kinds(result)) == ["inner", "semi"]
    assert_optimized_same(oracle, plan)


def test_exists_over_ungrouped_aggregate_is_true(oracle, t, u):
    outer = scan(t)
    inner = scan(u)
    sub = aggregate(filter_(inner, eq(col(inner, "x"), col(outer, "a"))), [],
                    n=agg("count_star"))
    plan = filter_(outer, exists(sub))
    assert kinds(decorrelate(plan)) == []
    assert_optimized_same(oracle, plan)
