"""How many built-in expression evaluations one row of an operator's expressions costs,
with user-defined functions weighted by their ``cost_per_row`` hint.

A built-in call counts 1 (the unit of ``FunctionHints.cost_per_row``); a UDF call counts
its hint, or ``DEFAULT_COST_PER_ROW`` when it gives none, so a plan that evaluates an
expensive function on fewer rows is cheaper.
"""

from __future__ import annotations

from flowsql.planner.expressions import AggCall, Call, ColumnRef, Expr, Literal, UdfCall, walk
from flowsql.planner.physical import (
    FilterExec,
    HashAggregateExec,
    HashJoinExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    ProjectExec,
    SortAggregateExec,
    SortMergeJoinExec,
    TableScanExec,
)
from flowsql.planner.udf import DEFAULT_COST_PER_ROW, UserFunction


def function_cost(function: UserFunction) -> float:
    """Cost of one call of ``function`` in built-in evaluations."""
    hint = function.hints.cost_per_row
    return DEFAULT_COST_PER_ROW if hint is None else float(hint)


def expression_units(expr: Expr) -> float:
    """Evaluations one row of ``expr`` costs: 1 per built-in call, a UDF its hint,
    nothing for a plain column or literal."""
    units = 0.0
    for sub in walk(expr):
        function = sub.function if isinstance(sub, (UdfCall, AggCall)) else None
        if function is not None:
            units += function_cost(function)
        elif not isinstance(sub, (ColumnRef, Literal)) and (isinstance(sub, Call)
                                                            or sub.children()):
            units += 1.0
    return units


def node_expressions(node: PhysicalPlan) -> tuple[Expr, ...]:
    """The expressions ``node`` evaluates on each input row (not its children's)."""
    if isinstance(node, FilterExec):
        return (node.predicate,)
    if isinstance(node, ProjectExec):
        return node.exprs
    if isinstance(node, TableScanExec):
        return node.filters
    if isinstance(node, (HashJoinExec, SortMergeJoinExec)):
        residual = (node.residual,) if node.residual is not None else ()
        return (*node.left_keys, *node.right_keys, *residual)
    if isinstance(node, NestedLoopJoinExec):
        return (node.condition,) if node.condition is not None else ()
    if isinstance(node, (HashAggregateExec, SortAggregateExec)):
        return (*node.group_exprs, *node.aggs)
    return ()


def node_expression_units(node: PhysicalPlan) -> float:
    """Evaluations per input row of all of ``node``'s expressions."""
    return sum(expression_units(e) for e in node_expressions(node))
