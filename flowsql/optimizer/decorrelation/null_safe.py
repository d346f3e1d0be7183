"""NULL-safe equality (``a IS NOT DISTINCT FROM b``) spelled as hash-joinable equalities.

The domain rewrite joins a subquery's result back to the outer rows on the outer columns it
read, and an outer row whose column is NULL must find the result computed for NULL. Plain
``=`` never matches NULL, and ``is_not_distinct_from`` is not an equality the physical
planner turns into hash keys (the join would fall back to a nested loop). Two equalities
that never yield NULL say the same thing and are both hash keys::

    coalesce(a, s) = coalesce(b, s)  AND  (a IS NULL) = (b IS NULL)

for any constant ``s`` of the type: two NULLs agree on both, a NULL and the value ``s``
differ on the second, two non-NULL values agree exactly when they are equal. Types without
an obvious constant keep ``is_not_distinct_from`` (correct, only slower).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Expr, Literal


def null_safe_equal(a: Expr, b: Expr, nullable: bool) -> list[Expr]:
    """Conjuncts true exactly when ``a IS NOT DISTINCT FROM b``; ``nullable``: whether
    either side may be NULL (if not, plain equality is the same thing)."""
    if not nullable:
        return [Call("eq", (a, b), T.BOOL)]
    sentinel = _sentinel(a.dtype) if a.dtype.equals(b.dtype) else None
    if sentinel is None:
        return [Call("is_not_distinct_from", (a, b), T.BOOL)]
    return [Call("eq", (_coalesce(a, sentinel), _coalesce(b, sentinel)), T.BOOL),
            Call("eq", (_is_null(a), _is_null(b)), T.BOOL)]


def _coalesce(e: Expr, sentinel: Literal) -> Expr:
    return Call("coalesce", (e, sentinel), e.dtype)


def _is_null(e: Expr) -> Expr:
    return Call("is_null", (e,), T.BOOL)


def _sentinel(dtype: pa.DataType) -> Literal | None:
    value: object
    if pa.types.is_integer(dtype):
        value = 0
    elif pa.types.is_floating(dtype):
        value = 0.0
    elif pa.types.is_decimal(dtype):
        value = Decimal(0)
    elif T.is_string(dtype):
        value = ""
    elif pa.types.is_boolean(dtype):
        value = False
    elif pa.types.is_date32(dtype):
        value = dt.date(1970, 1, 1)
    else:
        return None
    return Literal(value, dtype)
