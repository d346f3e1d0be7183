"""Fold constants and simplify boolean logic in every expression of the plan.

Runs after decorrelation (which leaves CASE and IS NULL scaffolding around literals) and
before filter pushdown, so that date arithmetic on literals reaches scans as plain
comparisons and join predicates repeated in every OR branch are factored out to top-level
conjuncts (see ``optimizer/folding.py``). A Filter whose predicate folds to TRUE goes away.
"""

from __future__ import annotations

from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.folding import fold, is_true
from flowsql.planner.logical import Filter, LogicalPlan, transform_plan


def simplify_expressions(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    return transform_plan(plan, _simplify_node)


def _simplify_node(node: LogicalPlan) -> LogicalPlan | None:
    exprs = node.expressions()
    folded = tuple(fold(e) for e in exprs)
    if any(a is not b for a, b in zip(folded, exprs)):
        node = node.with_expressions(folded)
    if isinstance(node, Filter) and is_true(node.predicate):
        return node.input
    return node
