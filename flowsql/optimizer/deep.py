"""Plan traversal that also enters the plans of subquery expressions.

``planner.logical.transform_plan`` stops at expressions; rules that run before
decorrelation (and the check that decorrelation left nothing behind) must see the plans
nested inside ``ScalarSubquery`` / ``Exists`` / ``InSubquery`` too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from flowsql.planner.expressions import SUBQUERY_TYPES, Expr, transform, walk
from flowsql.planner.logical import LogicalPlan, transform_plan, walk_plan

PlanFn = Callable[[LogicalPlan], LogicalPlan | None]


def transform_plan_deep(plan: LogicalPlan, fn: PlanFn) -> LogicalPlan:
    """Bottom-up rewrite of ``plan`` and of every subquery plan inside its expressions."""

    def visit(node: LogicalPlan) -> LogicalPlan | None:
        exprs = node.expressions()
        new_exprs = tuple(transform(e, lambda x: _rewrite_subquery(x, fn)) for e in exprs)
        if any(a is not b for a, b in zip(new_exprs, exprs)):
            node = node.with_expressions(new_exprs)
        result = fn(node)
        return node if result is None else result

    return transform_plan(plan, visit)


def _rewrite_subquery(e: Expr, fn: PlanFn) -> Expr | None:
    if not isinstance(e, SUBQUERY_TYPES):
        return None
    new_plan = transform_plan_deep(e.plan, fn)
    return None if new_plan is e.plan else replace(e, plan=new_plan)


def subquery_exprs(plan: LogicalPlan) -> Iterator[Expr]:
    """Every subquery expression left anywhere in ``plan`` (outermost ones)."""
    for node in walk_plan(plan):
        for e in node.expressions():
            yield from (x for x in walk(e) if isinstance(x, SUBQUERY_TYPES))
