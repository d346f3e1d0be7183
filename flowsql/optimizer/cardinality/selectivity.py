"""Selectivity of predicates: the fraction of rows for which a predicate is true.

Rules, each from the column's :class:`ColumnEstimate` when there is one and from the
defaults (``defaults.py``) otherwise:

* ``col = c``: ``(1 - null fraction) / distinct``, and 0 when ``c`` lies outside
  ``[min, max]``; ``col = other_col``: ``1 / max`` of their distinct counts; ``<>`` the rest;
* ``col IN (c1, ..., cn)``: the sum of the equalities, at most 1;
* ranges: the comparisons of one column with constants in a conjunction form one
  interval (``ranges.py``), so ``BETWEEN`` is one range, not two independent ones; an
  equality on the same column makes them redundant (or the conjunction empty);
* ``LIKE``: without wildcards an equality; ``'abc%'`` keeps ``LIKE_PREFIX_SELECTIVITY``;
  every further fixed fragment (``'%abc'``, ``'%a%b%'``) a factor ``LIKE_SELECTIVITY``;
* ``IS NULL`` / ``IS NOT NULL``: from the null count;
* ``NOT p``: ``1 - s(p)``; ``p OR q``: ``1 - (1 - s(p)) (1 - s(q))``;
* ``p AND q AND ...``: exponential backoff (``dampening.py``) over the value predicates
  (equalities, IN lists, LIKE, ...) on the columns of one base table, which may be
  correlated (a city implies its country, a brand its manufacturer: the product would count
  the implied predicate again); range predicates (comparisons with constants, one interval
  per column, and comparisons of two columns) multiply with them and with each other, as a
  histogram estimates each range over its own column and ranges seldom imply one another
  the way a value implies another value; factors on different tables (a join condition, or
  two scans of one table) are independent and multiply;
* a boolean user-defined function: its ``selectivity`` hint, else ``DEFAULT_SELECTIVITY``.

The estimator passes a lookup from column id to the input's estimate for that column; a
column it does not know (an outer reference) gets the defaults.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from flowsql.optimizer.cardinality.columns import ColumnEstimate
from flowsql.optimizer.cardinality.dampening import dampened_selectivity
from flowsql.optimizer.cardinality.defaults import (
    EQ_SELECTIVITY,
    LIKE_PREFIX_SELECTIVITY,
    LIKE_SELECTIVITY,
    NULL_SELECTIVITY,
    RANGE_SELECTIVITY,
    UNKNOWN_SELECTIVITY,
)
from flowsql.optimizer.cardinality.ranges import (
    Interval,
    comparison_interval,
    interval_fraction,
)
from flowsql.planner.expressions import (
    Call,
    Cast,
    ColumnRef,
    Expr,
    Literal,
    UdfCall,
    column_ids,
    conjuncts,
)
from flowsql.planner.statistics import statistic_number
from flowsql.planner.udf import DEFAULT_SELECTIVITY

Lookup = Callable[[int], ColumnEstimate | None]

_RANGE = ("lt", "lte", "gt", "gte")
_FLIPPED = {"lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte", "eq": "eq", "neq": "neq"}
_CONTAINS = ("contains", "ends_with", "regexp_matches")


@dataclass(frozen=True)
class Conjunction:
    """The selectivity of a conjunction, and per column the combined selectivity of its
    conjuncts that refer to that column alone (which is how far the column's distinct values
    shrink by the predicate itself, before the other conjuncts thin it further)."""

    selectivity: float
    per_column: dict[int, float] = field(default_factory=dict)


def conjunction(predicates: Sequence[Expr], lookup: Lookup) -> Conjunction:
    """Selectivity of the conjunction of ``predicates`` (see the module docstring)."""
    flat = [c for p in predicates for c in conjuncts(p)]
    intervals: dict[int, Interval] = {}
    equal_to: dict[int, float | None] = {}
    factors: dict[frozenset[int | None], list[float]] = {}
    ranges: list[float] = []  # independent of everything else (see the module docstring)
    local: dict[int, list[float]] = {}
    for c in flat:
        compared = column_constant(c)
        if compared is not None and compared[1] in _RANGE:
            column, op, value = compared
            number = _number(value, lookup(column.cid), column)
            if number is not None:
                cid = column.cid
                wanted = comparison_interval(op, number)
                intervals[cid] = intervals[cid].intersect(wanted) if cid in intervals else wanted
                continue
        if compared is not None and compared[1] == "eq":
            column, _, value = compared
            equal_to[column.cid] = _number(value, lookup(column.cid), column)
        s = selectivity(c, lookup)
        ids = column_ids(c)
        if _is_range(c):
            ranges.append(s)
        else:
            factors.setdefault(_origins(ids, lookup), []).append(s)
        if len(ids) == 1:
            local.setdefault(next(iter(ids)), []).append(s)
    for cid, interval in intervals.items():
        s = _range_selectivity(lookup(cid), interval, cid in equal_to, equal_to.get(cid))
        ranges.append(s)
        local.setdefault(cid, []).append(s)
    combined = math.prod(dampened_selectivity(group) for group in factors.values()) \
        * math.prod(ranges)
    return Conjunction(combined,
                       {cid: dampened_selectivity(ss) for cid, ss in local.items()})


def _is_range(c: Expr) -> bool:
    """Whether ``c`` is a comparison ``<``, ``<=``, ``>``, ``>=`` (of a column with a
    constant, or of two columns)."""
    return isinstance(c, Call) and c.name in _RANGE


def _origins(ids: set[int], lookup: Lookup) -> frozenset[int | None]:
    """The base tables (Scan ids; None: computed or unknown) the columns come from."""
    out: set[int | None] = set()
    for cid in ids:
        column = lookup(cid)
        out.add(column.origin if column is not None else None)
    return frozenset(out)


def _range_selectivity(column: ColumnEstimate | None, interval: Interval,
                       has_equality: bool, equal_value: float | None) -> float:
    if has_equality:
        # the equality already counted; the range only says whether its value qualifies
        if equal_value is None:
            return 1.0
        inside = interval.intersect(Interval(equal_value, equal_value))
        empty = inside.low is not None and inside.high is not None and (
            inside.low > inside.high or (inside.low == inside.high
                                         and not (inside.low_inclusive
                                                  and inside.high_inclusive)))
        return 0.0 if empty else 1.0
    if column is None:
        return interval_fraction(_UNKNOWN, interval)
    return _non_null(column) * interval_fraction(column, interval)


def selectivity(e: Expr, lookup: Lookup) -> float:
    """Fraction of rows for which ``e`` is true."""
    if isinstance(e, Literal):
        return 1.0 if e.value is True else 0.0
    if isinstance(e, UdfCall):
        hint = e.function.hints.selectivity
        return DEFAULT_SELECTIVITY if hint is None else min(max(hint, 0.0), 1.0)
    if not isinstance(e, Call):
        return UNKNOWN_SELECTIVITY
    name, args = e.name, e.args
    if name == "and":
        return conjunction(args, lookup).selectivity
    if name == "or":
        return 1.0 - math.prod(1.0 - selectivity(a, lookup) for a in args)
    if name == "not":
        return 1.0 - selectivity(args[0], lookup)
    if name in ("eq", "neq"):
        s = _equality(args[0], args[1], lookup)
        return s if name == "eq" else max(1.0 - s, 0.0)
    if name in _RANGE:
        return _single_range(e, lookup)
    if name == "in_list":
        return _in_list(args[0], args[1:], lookup)
    if name in ("like", "ilike") and isinstance(args[1], Literal):
        return _like(args[0], args[1].value, lookup)
    if name == "starts_with":
        return LIKE_PREFIX_SELECTIVITY
    if name in _CONTAINS:
        return LIKE_SELECTIVITY
    if name in ("like", "ilike"):
        return LIKE_SELECTIVITY
    if name in ("is_null", "is_not_null"):
        column = _column(args[0], lookup)
        nulls = NULL_SELECTIVITY if column is None or column.null_fraction is None \
            else column.null_fraction
        return nulls if name == "is_null" else 1.0 - nulls
    if name == "is_true":
        return selectivity(args[0], lookup)
    if name == "is_false":
        return 1.0 - selectivity(args[0], lookup)
    return UNKNOWN_SELECTIVITY


def _single_range(e: Call, lookup: Lookup) -> float:
    compared = column_constant(e)
    if compared is None:
        return RANGE_SELECTIVITY
    column_ref, op, value = compared
    column = lookup(column_ref.cid)
    number = _number(value, column, column_ref)
    if number is None:
        return RANGE_SELECTIVITY
    return _range_selectivity(column, comparison_interval(op, number), False, None)


def column_constant(e: Expr) -> tuple[ColumnRef, str, Literal] | None:
    """``(column, op, constant)`` when ``e`` compares a column with a constant (either
    order; the op is turned so the column is on the left), else None."""
    if not (isinstance(e, Call) and e.name in _FLIPPED and len(e.args) == 2):
        return None
    a, b = (_strip(x) for x in e.args)
    if isinstance(a, ColumnRef) and isinstance(b, Literal):
        return a, e.name, b
    if isinstance(b, ColumnRef) and isinstance(a, Literal):
        return b, _FLIPPED[e.name], a
    return None


def _strip(e: Expr) -> Expr:
    """A cast of a column or a constant compares like the column or constant itself."""
    return e.arg if isinstance(e, Cast) and isinstance(e.arg, ColumnRef | Literal) else e


def _column(e: Expr, lookup: Lookup) -> ColumnEstimate | None:
    e = _strip(e)
    return lookup(e.cid) if isinstance(e, ColumnRef) else None


def _number(value: Literal, column: ColumnEstimate | None, ref: ColumnRef) -> float | None:
    return statistic_number(value.value, column.dtype if column is not None else ref.dtype)


def _non_null(column: ColumnEstimate) -> float:
    return 1.0 - (column.null_fraction or 0.0)


def _equality(a: Expr, b: Expr, lookup: Lookup) -> float:
    compared = column_constant(Call("eq", (a, b), a.dtype))
    if compared is not None:
        column_ref, _, value = compared
        return _equals_constant(lookup(column_ref.cid), column_ref, value)
    left, right = _column(a, lookup), _column(b, lookup)
    if left is not None and right is not None:
        return 1.0 / max(left.distinct, right.distinct, 1.0)
    return EQ_SELECTIVITY


def _equals_constant(column: ColumnEstimate | None, ref: ColumnRef, value: Literal) -> float:
    if value.value is None:
        return 0.0  # x = NULL is never true
    if column is None:
        return EQ_SELECTIVITY
    number = _number(value, column, ref)
    if number is not None and column.low is not None and column.high is not None \
            and not column.low <= number <= column.high:
        return 0.0
    if column.measured:
        return _non_null(column) / max(column.distinct, 1.0)
    return max(EQ_SELECTIVITY, 1.0 / max(column.distinct, 1.0))


def _in_list(arg: Expr, values: Sequence[Expr], lookup: Lookup) -> float:
    total = sum(_equality(arg, v, lookup) for v in values)
    return min(total, 1.0)


def _like(arg: Expr, pattern: object, lookup: Lookup) -> float:
    if not isinstance(pattern, str):
        return 0.0 if pattern is None else LIKE_SELECTIVITY
    if "%" not in pattern and "_" not in pattern:
        return _equality(arg, Literal(pattern, arg.dtype), lookup)
    fragments = [f for f in pattern.split("%") if f.strip("_")]
    column = _column(arg, lookup)
    non_null = _non_null(column) if column is not None else 1.0
    if not fragments:
        return non_null
    if pattern.startswith("%"):
        return non_null * LIKE_SELECTIVITY ** len(fragments)
    return non_null * LIKE_PREFIX_SELECTIVITY * LIKE_SELECTIVITY ** (len(fragments) - 1)


#: a column nothing is known about (ranges over it keep the default selectivities)
_UNKNOWN = ColumnEstimate(1.0, pa.null())
