"""Push a semi join below the inner joins under it, onto the input its keys come from.

Decorrelating ``WHERE o_orderkey IN (SELECT l_orderkey ... HAVING ...)`` leaves a semi join
above the whole FROM clause (TPC-H Q18): every row of ``lineitem JOIN orders JOIN customer``
(6 million at SF 1) is produced, then all but a few hundred are dropped. A semi join keeps a
row of its left input by looking at that row's own columns only, so when every left column
its condition reads comes from one input of an inner join below it, the same rows survive
when that input is filtered first::

    (A JOIN B ON p) SEMI JOIN R ON q(A, R)   =   (A SEMI JOIN R ON q) JOIN B ON p

The output columns and their order are unchanged (a semi join outputs its left input's
columns). The rule repeats down the join tree, so the semi join lands on the smallest input
that holds its keys -- in Q18 the scan of ``orders`` -- where join ordering then sees a leaf
reduced to the matching rows (semi joins are leaves of a join block).

Only through inner and cross joins (the right side of an outer join is null-supplying; a row
kept there would not be the same row above it), never through a lookup join (its sides are
fixed), and not for null-aware or mark joins. Not in ``execution.runtime-mode`` =
``streaming``: there a join's state and its changelog depend on where it stands.

Costed: the semi join goes down only when the cost model (``cost.plan_cost`` over the
estimator's rows) finds the join tree cheaper with it there. Below a join that keeps few
rows (TPC-H Q21's lineitem joined with one nation's suppliers, Q20's suppliers of one
nation) it would probe more rows than above it, and it stays.
"""

from __future__ import annotations

from dataclasses import replace

from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.cost import plan_cost
from flowsql.optimizer.plan_window_aggregate import runtime_mode
from flowsql.planner.expressions import column_ids
from flowsql.planner.logical import Join, LogicalPlan


def push_down_semi_join(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    if runtime_mode(context.settings) == "streaming":
        return plan
    return _visit(plan, context.estimator)


def _visit(plan: LogicalPlan, estimator: CardinalityEstimator) -> LogicalPlan:
    inputs = tuple(_visit(c, estimator) for c in plan.inputs)
    if any(a is not b for a, b in zip(inputs, plan.inputs)):
        plan = plan.with_inputs(inputs)
    if isinstance(plan, Join) and plan.kind == "semi" and not plan.null_aware:
        pushed = _push(plan, estimator)
        if pushed is not plan and plan_cost(pushed, estimator) < plan_cost(plan, estimator):
            return pushed
    return plan


def _push(semi: Join, estimator: CardinalityEstimator) -> LogicalPlan:
    """``semi`` with its left input's inner joins taken above it where its keys allow, as
    far down as it is cheaper at each step."""
    below = semi.left
    if not (isinstance(below, Join) and below.kind in ("inner", "cross")
            and not below.lookup and below.mark is None):
        return semi
    read = (column_ids(semi.condition) & below.column_ids if semi.condition is not None
            else set())
    if not read:
        return semi  # a semi join on no left column keeps all rows or none: leave it
    if read <= below.left.column_ids:
        lower = replace(semi, left=below.left)
        return below.with_inputs((_deeper(lower, estimator), below.right))
    if read <= below.right.column_ids:
        lower = replace(semi, left=below.right)
        return below.with_inputs((below.left, _deeper(lower, estimator)))
    return semi


def _deeper(semi: Join, estimator: CardinalityEstimator) -> LogicalPlan:
    """``semi`` pushed further down where that is cheaper, else as it is."""
    pushed = _push(semi, estimator)
    if pushed is not semi and plan_cost(pushed, estimator) < plan_cost(semi, estimator):
        return pushed
    return semi
