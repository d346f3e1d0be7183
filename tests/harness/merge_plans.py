"""A test-only rewrite of a physical plan into its sort-based twin: every hash join of a
kind a merge join computes becomes SortExec + SortExec + SortMergeJoinExec, and every hash
aggregate becomes SortExec + SortAggregateExec. The sorts go directly below the new node,
so above any exchange (each subtask sorts what it received), as the ordering check wants."""

from __future__ import annotations

from flowsql.planner.expressions import Expr, SortKey
from flowsql.planner.physical import (
    HashAggregateExec,
    HashJoinExec,
    PhysicalPlan,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
)
from flowsql.runtime.operators.join.sort_merge_join import KINDS


def sorted_on(plan: PhysicalPlan, keys: tuple[Expr, ...]) -> PhysicalPlan:
    """``plan`` sorted ascending NULLS LAST on ``keys`` (unchanged without keys)."""
    if not keys:
        return plan
    return SortExec(plan, tuple(SortKey(k, True, False) for k in keys), plan.est_rows)


def merge_plan(plan: PhysicalPlan) -> PhysicalPlan:
    """``plan`` with hash joins and hash aggregates replaced as the module says."""
    plan = plan.with_inputs(tuple(merge_plan(child) for child in plan.inputs))
    if (isinstance(plan, HashJoinExec) and plan.kind in KINDS and not plan.null_aware
            and plan.left_keys):
        return SortMergeJoinExec(sorted_on(plan.left, plan.left_keys),
                                 sorted_on(plan.right, plan.right_keys), plan.kind,
                                 plan.left_keys, plan.right_keys, plan.residual, plan.est_rows)
    if isinstance(plan, HashAggregateExec):
        return SortAggregateExec(sorted_on(plan.input, plan.group_exprs), plan.group_exprs,
                                 plan.group_fields, plan.aggs, plan.agg_fields, plan.est_rows)
    return plan


def count_nodes(plan: PhysicalPlan, kind: type) -> int:
    return int(isinstance(plan, kind)) + sum(count_nodes(c, kind) for c in plan.inputs)
