"""Order the conjuncts of every filter so that cheap, selective ones run first.

Each conjunct gets the classic rank ``(selectivity - 1) / cost_per_row`` (Hellerstein's
predicate ordering): a conjunct that removes many rows for little work has the most
negative rank and goes first. Costs are those of ``optimizer.udf_hints.cost_per_row`` (a
built-in operation 1, a user-defined call its ``cost_per_row`` hint or the default);
selectivities come from a boolean call's ``selectivity`` hint, else from the estimator.
The runtime evaluates a conjunction that calls a user-defined function in this order on
the surviving rows (``runtime.expressions.conjunction``), so an expensive function runs
only on the rows the cheap conjuncts kept.

A conjunct calling a non-deterministic function is never reordered: it stays in its
place, and the conjuncts before it stay before it (each side is ordered on its own), so
it is evaluated on the same rows as written.

Applies to Filter predicates and scan filters (the scan evaluates them the same way), and
only where a conjunct calls a user-defined function: built-in conjuncts are evaluated
together over the whole batch, so their order changes nothing, and plans without user
functions stay exactly as they were.
"""

from __future__ import annotations

from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.udf_hints import cost_per_row, hint_selectivity, udf_calls
from flowsql.planner.determinism import is_deterministic
from flowsql.planner.expressions import Expr, conjoin, conjuncts
from flowsql.planner.logical import Filter, LogicalPlan, Scan, transform_plan


def order_predicates(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    def visit(node: LogicalPlan) -> LogicalPlan | None:
        if not isinstance(node, Filter | Scan) or not any(
                udf_calls(e) for e in node.expressions()):
            return None
        if isinstance(node, Filter):
            ordered = _order(conjuncts(node.predicate), node.input, context)
            predicate = conjoin(ordered)
            if predicate is None or ordered == conjuncts(node.predicate):
                return None
            return Filter(node.input, predicate)
        if isinstance(node, Scan) and len(node.filters) > 1:
            ordered = _order(list(node.filters), node, context)
            return None if ordered == list(node.filters) else node.with_expressions(
                tuple(ordered))
        return None

    return transform_plan(plan, visit)


def rank(conjunct: Expr, input: LogicalPlan, context: OptimizerContext) -> float:
    """``(selectivity - 1) / cost_per_row``: lower runs first."""
    selectivity = hint_selectivity(conjunct)
    if selectivity is None:
        selectivity = context.estimator.selectivity(conjunct, input)
    return (min(max(selectivity, 0.0), 1.0) - 1.0) / cost_per_row(conjunct)


def _order(parts: list[Expr], input: LogicalPlan, context: OptimizerContext) -> list[Expr]:
    """``parts`` by rank, each run between non-deterministic conjuncts on its own."""
    out: list[Expr] = []
    run: list[Expr] = []
    for part in parts:
        if is_deterministic(part):
            run.append(part)
            continue
        out.extend(sorted(run, key=lambda p: rank(p, input, context)))
        out.append(part)
        run = []
    out.extend(sorted(run, key=lambda p: rank(p, input, context)))
    return out
