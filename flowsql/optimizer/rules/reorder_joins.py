"""Choose the order of a tree of inner/cross joins greedily by estimated cost.

A maximal tree of inner and cross joins is flattened into its leaves (each reordered on its
own first) and the conjuncts of its conditions. Then, as in greedy operator ordering, the
pair of components whose join is cheapest (``cost.join_cost`` over the estimator's rows) is
joined until one component is left; a pair connected by some conjunct always beats an
unconnected one, so a cross product appears only when the join graph is disconnected.
Each conjunct is attached at the lowest join that has all its columns. A Project on top
restores the original column order. Trees of two leaves are left alone.
"""

from __future__ import annotations

from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.optimizer.columns import project_onto
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.cost import join_cost
from flowsql.planner.expressions import Expr, column_ids, conjoin, conjuncts
from flowsql.planner.logical import Filter, Join, LogicalPlan


def reorder_joins(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    return _reorder(plan, context.estimator)


def _is_inner(plan: LogicalPlan) -> bool:
    return isinstance(plan, Join) and plan.kind in ("inner", "cross")


def _reorder(plan: LogicalPlan, estimator: CardinalityEstimator) -> LogicalPlan:
    if not _is_inner(plan):
        inputs = tuple(_reorder(c, estimator) for c in plan.inputs)
        if all(a is b for a, b in zip(inputs, plan.inputs)):
            return plan
        return plan.with_inputs(inputs)
    leaves: list[LogicalPlan] = []
    preds: list[Expr] = []
    _flatten(plan, leaves, preds)
    leaves = [_reorder(leaf, estimator) for leaf in leaves]
    if len(leaves) < 3:
        same = all(a is b for a, b in zip(leaves, plan.inputs))
        return plan if same else plan.with_inputs(tuple(leaves))
    return project_onto(_greedy(leaves, preds, estimator), plan.schema)


def _flatten(plan: LogicalPlan, leaves: list[LogicalPlan], preds: list[Expr]) -> None:
    if _is_inner(plan):
        assert isinstance(plan, Join)
        preds.extend(conjuncts(plan.condition))
        _flatten(plan.left, leaves, preds)
        _flatten(plan.right, leaves, preds)
    else:
        leaves.append(plan)


def _greedy(leaves: list[LogicalPlan], preds: list[Expr],
            estimator: CardinalityEstimator) -> LogicalPlan:
    pending = list(preds)
    components = []
    for leaf in leaves:
        component, pending = _attach_local(leaf, pending)
        components.append(component)
    while len(components) > 1:
        best: tuple[tuple[bool, float], int, int, Join, list[Expr]] | None = None
        for i in range(len(components)):
            for j in range(i + 1, len(components)):
                candidate, used = _join(components[i], components[j], pending, estimator)
                score = (not used, join_cost(estimator.rows(components[i]),
                                             estimator.rows(components[j]),
                                             estimator.rows(candidate)))
                if best is None or score < best[0]:
                    best = (score, i, j, candidate, used)
        assert best is not None
        _, i, j, candidate, used = best
        pending = [p for p in pending if not any(p is u for u in used)]
        components = [c for k, c in enumerate(components) if k not in (i, j)] + [candidate]
    predicate = conjoin(pending)  # only conjuncts over no column at all can be left
    return components[0] if predicate is None else Filter(components[0], predicate)


def _attach_local(leaf: LogicalPlan,
                  pending: list[Expr]) -> tuple[LogicalPlan, list[Expr]]:
    """Conjuncts over this leaf alone (left here when pushdown is switched off) filter it;
    returns the leaf and the conjuncts still pending."""
    ids = leaf.column_ids
    local = [p for p in pending if column_ids(p) and column_ids(p) <= ids]
    rest = [p for p in pending if not (column_ids(p) and column_ids(p) <= ids)]
    predicate = conjoin(local)
    return (leaf if predicate is None else Filter(leaf, predicate)), rest


def _join(a: LogicalPlan, b: LogicalPlan, pending: list[Expr],
          estimator: CardinalityEstimator) -> tuple[Join, list[Expr]]:
    """The join of two components with every pending conjunct that needs both; the larger
    input goes left (the probe side in a hash join)."""
    ids_a, ids_b = a.column_ids, b.column_ids
    both = ids_a | ids_b
    used = [p for p in pending
            if column_ids(p) <= both and not column_ids(p) <= ids_a
            and not column_ids(p) <= ids_b]
    if estimator.rows(a) < estimator.rows(b):
        a, b = b, a
    condition = conjoin(used)
    return Join(a, b, "inner" if condition is not None else "cross", condition), used
