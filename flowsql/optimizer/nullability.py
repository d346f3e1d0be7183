"""Whether an expression may evaluate to NULL, from the nullability of the columns it reads.

Used to drop NULL handling the data cannot need (a NOT IN over non-nullable columns is a
plain anti join). Select lists declare every column nullable, so a column's nullability is
traced through Projects down to the scan that reads it. Conservative: when unsure, NULL is
possible.
"""

from __future__ import annotations

from collections.abc import Callable

from flowsql.planner.expressions import Call, Cast, ColumnRef, Expr, Literal
from flowsql.planner.logical import Filter, Limit, LogicalPlan, Project, Sort

# Functions that never return NULL on non-NULL arguments.
_STRICT = frozenset({
    "add", "subtract", "multiply", "negate", "eq", "neq", "lt", "lte", "gt", "gte",
    "upper", "lower", "trim", "ltrim", "rtrim", "length", "abs", "floor", "ceil", "sign",
    "extract_year", "extract_quarter", "extract_month", "extract_day", "extract_dow",
    "extract_doy", "extract_week", "substring", "concat", "like", "ilike", "not", "and",
    "or",
})
_NEVER_NULL = frozenset({"is_null", "is_not_null", "is_true", "is_false",
                         "is_distinct_from", "is_not_distinct_from"})

Nullable = Callable[[int], bool]


def may_be_null(e: Expr, nullable: Nullable) -> bool:
    """``nullable(cid)`` says whether a column may hold NULL."""
    if isinstance(e, Literal):
        return e.value is None
    if isinstance(e, ColumnRef):
        return nullable(e.cid)
    if isinstance(e, Cast):
        return may_be_null(e.arg, nullable)
    if isinstance(e, Call):
        if e.name in _NEVER_NULL:
            return False
        if e.name == "coalesce":
            return all(may_be_null(a, nullable) for a in e.args)
        if e.name in _STRICT:
            return any(may_be_null(a, nullable) for a in e.args)
    return True


def column_nullability(plan: LogicalPlan) -> Nullable:
    """Nullability of ``plan``'s columns (unknown ids: nullable), seen through Projects."""

    def nullable(cid: int) -> bool:
        return _nullable(plan, cid)

    return nullable


def _nullable(plan: LogicalPlan, cid: int) -> bool:
    while isinstance(plan, Filter | Sort | Limit):
        plan = plan.input
    if isinstance(plan, Project):
        for e, f in zip(plan.exprs, plan.fields):
            if f.cid == cid:
                return f.nullable and may_be_null(e, column_nullability(plan.input))
    for f in plan.schema:
        if f.cid == cid:
            return f.nullable
    return True
