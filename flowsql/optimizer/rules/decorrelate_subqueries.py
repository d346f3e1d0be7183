"""Rewrite every subquery expression into a join, so no query re-executes per row.

Works bottom-up: the plans inside a node's subqueries are decorrelated first (a subquery of
a subquery becomes a join inside the inner plan, and any predicate it lifted that reads a
still-outer column surfaces as a correlated predicate of the inner plan, lifted in turn by
the outer rewrite). See ``optimizer/decorrelation`` for the join forms and why each is exact.
Subqueries are accepted in Filter predicates (WHERE, HAVING) and Project expressions (the
select list); anywhere else PlanError names the construct. Each subquery is decorrelated by
predicate pull-up or by evaluating it once per distinct outer value (the domain rewrite):
where only one applies, by that one; where both do, by the cheaper by the cost model
(``decorrelation/choice.py``; EXPLAIN VERBOSE lists each decision). In
``execution.runtime-mode`` = ``streaming`` pull-up is taken wherever it applies, as the
later rules that the costing anticipates do not run there. The few shapes neither method
handles (a correlated FULL join or null-aware join inside the subquery) raise PlanError
naming the construct.
"""

from __future__ import annotations

from flowsql.errors import PlanError
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.decorrelation.choice import MethodChoice
from flowsql.optimizer.decorrelation.rewrite import rewrite_filter, rewrite_project
from flowsql.optimizer.deep import subquery_exprs, transform_plan_deep
from flowsql.optimizer.plan_window_aggregate import runtime_mode
from flowsql.optimizer.rules.push_down_filter import push_down_filter
from flowsql.optimizer.rules.reduce_by_semi_join import reduce_by_semi_join
from flowsql.optimizer.rules.reorder_joins import reorder_joins
from flowsql.planner.expressions import contains_subquery, render
from flowsql.planner.logical import Filter, LogicalPlan, Project


def decorrelate_subqueries(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    choice = None
    if runtime_mode(context.settings) != "streaming":
        # each plan is costed as the rules after this one leave it (see choice.py)
        choice = MethodChoice(context.estimator, lambda p: reorder_joins(reduce_by_semi_join(
            push_down_filter(p, context), context), context))
    result = transform_plan_deep(plan, lambda node: _rewrite_node(node, choice))
    leftover = next(subquery_exprs(result), None)
    if leftover is not None:
        raise PlanError(f"decorrelate_subqueries: could not rewrite '{render(leftover)}'")
    if choice is not None:
        context.notes.extend(choice.notes)
    return result


def _rewrite_node(node: LogicalPlan, choice: MethodChoice | None) -> LogicalPlan | None:
    # transform_plan_deep has already decorrelated the plans inside this node's subqueries.
    if not any(contains_subquery(e) for e in node.expressions()):
        return None
    if isinstance(node, Filter):
        return rewrite_filter(node, choice)
    if isinstance(node, Project):
        return rewrite_project(node, choice)
    raise PlanError(f"decorrelate_subqueries: subqueries inside {_where(node)} are not "
                    "supported")


def _where(node: LogicalPlan) -> str:
    return {"Aggregate": "aggregate functions or GROUP BY", "Join": "a JOIN ... ON condition",
            "Window": "window functions", "Values": "VALUES rows", "Sort": "ORDER BY",
            "Scan": "a scan filter"}.get(type(node).__name__, type(node).__name__)
