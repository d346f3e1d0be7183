"""Rewrite every subquery expression into a join, so no query re-executes per row.

Works bottom-up: the plans inside a node's subqueries are decorrelated first (a subquery of
a subquery becomes a join inside the inner plan, and any predicate it lifted that reads a
still-outer column surfaces as a correlated predicate of the inner plan, lifted in turn by
the outer rewrite). See ``optimizer/decorrelation`` for the join forms and why each is exact.
Subqueries are accepted in Filter predicates (WHERE, HAVING) and Project expressions (the
select list); anywhere else PlanError names the construct. Each subquery is decorrelated by
predicate pull-up where it can be (cheapest), else by evaluating it once per distinct outer
value (the domain rewrite); the few shapes neither handles (a correlated FULL join or
null-aware join inside the subquery) raise PlanError naming the construct.
"""

from __future__ import annotations

from flowsql.errors import PlanError
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.decorrelation.rewrite import rewrite_filter, rewrite_project
from flowsql.optimizer.deep import subquery_exprs, transform_plan_deep
from flowsql.planner.expressions import contains_subquery, render
from flowsql.planner.logical import Filter, LogicalPlan, Project


def decorrelate_subqueries(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    result = transform_plan_deep(plan, _rewrite_node)
    leftover = next(subquery_exprs(result), None)
    if leftover is not None:
        raise PlanError(f"decorrelate_subqueries: could not rewrite '{render(leftover)}'")
    return result


def _rewrite_node(node: LogicalPlan) -> LogicalPlan | None:
    # transform_plan_deep has already decorrelated the plans inside this node's subqueries.
    if not any(contains_subquery(e) for e in node.expressions()):
        return None
    if isinstance(node, Filter):
        return rewrite_filter(node)
    if isinstance(node, Project):
        return rewrite_project(node)
    raise PlanError(f"decorrelate_subqueries: subqueries inside {_where(node)} are not "
                    "supported")


def _where(node: LogicalPlan) -> str:
    return {"Aggregate": "aggregate functions or GROUP BY", "Join": "a JOIN ... ON condition",
            "Window": "window functions", "Values": "VALUES rows", "Sort": "ORDER BY",
            "Scan": "a scan filter"}.get(type(node).__name__, type(node).__name__)
