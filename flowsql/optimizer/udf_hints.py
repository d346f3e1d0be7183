"""What the optimizer reads from user-defined function hints (``planner/udf.py``).

* whether an expression may be moved or reordered at all is
  ``planner.determinism.is_deterministic``.
* :func:`cost_per_row` -- the cost of evaluating an expression once, relative to a built-in
  comparison (1.0): each user-defined call costs its ``cost_per_row`` hint (or
  ``DEFAULT_COST_PER_ROW``), every built-in node 1.
* :func:`hint_selectivity` -- the selectivity hint of a predicate that is one boolean
  user-defined call, when given.

EXPLAIN shows the hints a predicate's calls declare (``planner/explain.py``).
"""

from __future__ import annotations

from flowsql.planner.expressions import ColumnRef, Expr, Literal, UdfCall, walk
from flowsql.planner.udf import DEFAULT_COST_PER_ROW

#: the cost of a built-in operation, the unit of ``cost_per_row``
BUILTIN_COST = 1.0


def udf_calls(expr: Expr) -> list[UdfCall]:
    return [e for e in walk(expr) if isinstance(e, UdfCall)]


def cost_per_row(expr: Expr) -> float:
    total = 0.0
    for e in walk(expr):
        if isinstance(e, UdfCall):
            hint = e.function.hints.cost_per_row
            total += DEFAULT_COST_PER_ROW if hint is None else hint
        elif not isinstance(e, ColumnRef | Literal):
            total += BUILTIN_COST
    return max(total, BUILTIN_COST)


def hint_selectivity(expr: Expr) -> float | None:
    return expr.function.hints.selectivity if isinstance(expr, UdfCall) else None
