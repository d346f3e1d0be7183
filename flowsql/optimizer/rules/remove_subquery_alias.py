"""Drop SubqueryAlias nodes: they only mark where a derived table, view or CTE was inlined.

They pass their input's columns through under the same ids, so removing them changes no
expression; later rules then see through inlined subqueries without a special case.
"""

from __future__ import annotations

from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.deep import transform_plan_deep
from flowsql.planner.logical import LogicalPlan, SubqueryAlias


def remove_subquery_alias(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    return transform_plan_deep(
        plan, lambda node: node.input if isinstance(node, SubqueryAlias) else None)
