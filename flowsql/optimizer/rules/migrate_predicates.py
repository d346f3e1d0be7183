"""Predicate migration: lift an expensive predicate above a join that removes rows.

Pushdown puts every predicate as low as it can go, which is right for cheap predicates
and wrong for an expensive user-defined one under a selective join: evaluated below, it
runs on every row of its input; evaluated above, only on the rows the join keeps
(Hellerstein and Stonebraker's predicate migration). For each conjunct of a Filter (or
scan filter) directly under an inner join that calls a user-defined function, the rule
compares

* below: ``rows(input without it) * cost_per_row`` + the join over the filtered input,
* above: the join over the unfiltered input + ``rows(join output) * cost_per_row``,

(join cost as ``optimizer.cost.join_cost``) and lifts the conjunct above the join when
that is cheaper. Working bottom-up, a lifted predicate is considered again at the next
join up. Non-deterministic conjuncts never move (``planner.determinism``).
"""

from __future__ import annotations

from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.cost import join_cost
from flowsql.optimizer.udf_hints import cost_per_row, udf_calls
from flowsql.planner.determinism import is_deterministic
from flowsql.planner.expressions import Expr, conjoin, conjuncts
from flowsql.planner.logical import Filter, Join, LogicalPlan, Scan, transform_plan


def migrate_predicates(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    def visit(node: LogicalPlan) -> LogicalPlan | None:
        if not (isinstance(node, Join) and node.kind in ("inner", "cross")):
            return None
        join: Join = node
        lifted: list[Expr] = []
        for side in (0, 1):
            for candidate in _candidates(join.inputs[side]):
                moved = _lift(join, side, candidate, context)
                if moved is not None:
                    join = moved
                    lifted.append(candidate)
        predicate = conjoin(lifted)
        return None if predicate is None else Filter(join, predicate)

    return transform_plan(plan, visit)


def _predicates(node: LogicalPlan) -> list[Expr]:
    if isinstance(node, Filter):
        return conjuncts(node.predicate)
    if isinstance(node, Scan):
        return list(node.filters)
    return []


def _candidates(node: LogicalPlan) -> list[Expr]:
    """Conjuncts of ``node`` worth lifting, most expensive first."""
    found = [p for p in _predicates(node) if udf_calls(p) and is_deterministic(p)]
    return sorted(found, key=cost_per_row, reverse=True)


def _without(node: LogicalPlan, conjunct: Expr) -> LogicalPlan:
    rest = [p for p in _predicates(node) if p is not conjunct]
    if isinstance(node, Scan):
        return node.with_expressions(tuple(rest))
    assert isinstance(node, Filter)
    predicate = conjoin(rest)
    return node.input if predicate is None else Filter(node.input, predicate)


def _lift(join: Join, side: int, conjunct: Expr, context: OptimizerContext) -> Join | None:
    """``join`` with ``conjunct`` taken out of input ``side`` when evaluating it above the
    join costs less, else None."""
    rows = context.estimator.rows
    below_input = join.inputs[side]
    if not any(p is conjunct for p in _predicates(below_input)):
        return None
    above_input = _without(below_input, conjunct)
    inputs = list(join.inputs)
    inputs[side] = above_input
    lifted = join.with_inputs(tuple(inputs))
    assert isinstance(lifted, Join)
    other = rows(join.inputs[1 - side])
    cost = cost_per_row(conjunct)
    below = (rows(above_input) * cost
             + join_cost(rows(below_input), other, rows(join)))
    above = join_cost(rows(above_input), other, rows(lifted)) + rows(lifted) * cost
    return lifted if above < below else None
