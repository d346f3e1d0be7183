"""Bound predicates -> ``pyarrow.dataset`` filter expressions, for Parquet row-group pruning.

Contract: the translated expression never rejects a row the SQL predicate accepts (it may
accept rows the predicate rejects). The scan's caller re-applies every filter exactly, so
pushdown only ever saves work. Two modes keep that promise:

* *weak* (positive position): an AND may drop conjuncts it cannot translate, because a
  weaker conjunction keeps a superset of rows; an OR needs every disjunct (weakened).
* *exact* (under NOT): only fully translated sub-expressions, with SQL's NULL behaviour
  (Kleene AND/OR, comparisons that yield NULL on NULL input), since negating a weakened
  predicate would drop rows.

Literals are cast to the file column's type; when that cast would change the value the
comparison is not pushed.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.expressions import Call, ColumnRef, Expr, Literal

_FLIPPED = {"eq": "eq", "neq": "neq", "lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte"}
_COMPARE = {"eq": lambda f, v: f == v, "neq": lambda f, v: f != v, "lt": lambda f, v: f < v,
            "lte": lambda f, v: f <= v, "gt": lambda f, v: f > v, "gte": lambda f, v: f >= v}


def to_dataset_filter(filters: Iterable[Expr], schema: pa.Schema) -> pc.Expression | None:
    """The conjunction of whatever part of ``filters`` translates (None when nothing does).

    ``schema`` is the dataset's schema; column references are matched by name."""
    parts = [p for p in (_translate(f, schema, exact=False) for f in filters) if p is not None]
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out & p
    return out


def _scalar(lit: Literal, target: pa.DataType) -> pa.Scalar | None:
    if lit.value is None:
        return None
    try:
        value = pa.scalar(lit.value, type=lit.dtype)
        cast = value.cast(target)
    except (pa.ArrowException, TypeError, ValueError):
        return None
    try:
        if cast.cast(lit.dtype) != value:
            return None
    except (pa.ArrowException, TypeError, ValueError):
        return None
    return cast


def _column(e: Expr, schema: pa.Schema) -> tuple[pc.Expression, pa.DataType] | None:
    if isinstance(e, ColumnRef) and e.name in schema.names:
        return pc.field(e.name), schema.field(e.name).type
    return None


def _comparison(e: Call, schema: pa.Schema) -> pc.Expression | None:
    left, right = e.args
    name = e.name
    if isinstance(left, Literal) and isinstance(right, ColumnRef):
        left, right, name = right, left, _FLIPPED[name]
    column = _column(left, schema)
    if column is None or not isinstance(right, Literal):
        return None
    value = _scalar(right, column[1])
    return None if value is None else _COMPARE[name](column[0], value)


def _in_list(e: Call, schema: pa.Schema, exact: bool) -> pc.Expression | None:
    column = _column(e.args[0], schema)
    if column is None or not all(isinstance(a, Literal) for a in e.args[1:]):
        return None
    values = []
    for a in e.args[1:]:
        assert isinstance(a, Literal)
        if a.value is None:
            if exact:
                return None  # x IN (.., NULL) is NULL, never false: keep it out of NOT
            continue
        v = _scalar(a, column[1])
        if v is None:
            return None
        values.append(v)
    if not values:
        return None
    # is_in has no string_view kernel (pyarrow 26): spell it as equalities there.
    if exact or pa.types.is_string_view(column[1]) or pa.types.is_binary_view(column[1]):
        out = column[0] == values[0]
        for v in values[1:]:
            out = out | (column[0] == v)
        return out
    return column[0].isin(pa.array([v.as_py() for v in values], type=column[1]))


def _translate(e: Expr, schema: pa.Schema, exact: bool) -> pc.Expression | None:
    if not isinstance(e, Call):
        if isinstance(e, ColumnRef) and e.name in schema.names and \
                pa.types.is_boolean(schema.field(e.name).type):
            return pc.field(e.name)
        return None
    if e.name in _COMPARE:
        return _comparison(e, schema)
    if e.name in ("and", "or"):
        parts = [_translate(a, schema, exact) for a in e.args]
        if e.name == "and" and not exact:
            parts = [p for p in parts if p is not None]
            if not parts:
                return None
        elif any(p is None for p in parts):
            return None
        present = [p for p in parts if p is not None]
        out = present[0]
        for p in present[1:]:
            out = (out & p) if e.name == "and" else (out | p)
        return out
    if e.name == "not":
        inner = _translate(e.args[0], schema, exact=True)
        return None if inner is None else ~inner
    if e.name in ("is_null", "is_not_null"):
        column = _column(e.args[0], schema)
        if column is None:
            return None
        return column[0].is_null() if e.name == "is_null" else column[0].is_valid()
    if e.name == "in_list":
        return _in_list(e, schema, exact)
    return None
