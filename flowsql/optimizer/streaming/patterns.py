"""Recognizing the SQL shapes that streaming plans implement with dedicated operators.

* ``rank_range``: a filter on a ROW_NUMBER column (``rn <= 3``, ``rn < 4``, ``rn = 1``,
  ``rn BETWEEN 2 AND 5`` and conjunctions of them) as the inclusive range it keeps;
* ``interval_bounds``: join conditions that bound one rowtime by the other
  (``r.ts BETWEEN l.ts - INTERVAL '1' MINUTE AND l.ts + INTERVAL '2' MINUTE``, or the same
  with ``>=``/``<=``/``>``/``<`` conjuncts) as millisecond offsets of the right rowtime
  from the left one, with the conjuncts that remain;
* ``interval_ms``: an interval literal (or an integer count of milliseconds) as ms.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa

from flowsql.planner.expressions import Call, ColumnRef, Expr, Literal, conjuncts

_FLIP = {"lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte", "eq": "eq"}


def interval_ms(value: Any) -> int | None:
    """Milliseconds of an interval literal value; None when it is not a day-time interval."""
    if isinstance(value, dt.timedelta):
        return int(value / dt.timedelta(milliseconds=1))
    if isinstance(value, pa.MonthDayNano):
        value = (value.months, value.days, value.nanoseconds)
    if isinstance(value, tuple) and len(value) == 3:
        months, days, nanos = value
        if months:
            return None
        return days * 86_400_000 + nanos // 1_000_000
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def rank_range(predicate: Expr, rank_cid: int) -> tuple[int, int] | None:
    """(lower, upper) inclusive when ``predicate`` only restricts the rank column."""
    lower, upper = 1, None
    for conjunct in conjuncts(predicate):
        bound = _rank_bound(conjunct, rank_cid)
        if bound is None:
            return None
        op, value = bound
        if op in ("lte", "lt", "eq"):
            limit = value - 1 if op == "lt" else value
            upper = limit if upper is None else min(upper, limit)
        if op in ("gte", "gt", "eq"):
            floor = value + 1 if op == "gt" else value
            lower = max(lower, floor)
    if upper is None or upper < lower:
        return None
    return lower, upper


def _rank_bound(expr: Expr, rank_cid: int) -> tuple[str, int] | None:
    if not isinstance(expr, Call) or expr.name not in _FLIP or len(expr.args) != 2:
        return None
    left, right = expr.args
    op = expr.name
    if isinstance(right, ColumnRef) and right.cid == rank_cid:
        left, right, op = right, left, _FLIP[op]
    if not (isinstance(left, ColumnRef) and left.cid == rank_cid and isinstance(right, Literal)
            and isinstance(right.value, int) and not isinstance(right.value, bool)):
        return None
    return op, right.value


def interval_bounds(condition: Expr | None, left_time: int, right_time: int
                    ) -> tuple[int, int, Expr | None] | None:
    """(lower_ms, upper_ms, rest): ``left_time + lower <= right_time <= left_time + upper``.

    ``rest`` is the conjunction of the conjuncts that are not time bounds. None when the
    condition does not bound the right rowtime on both sides.
    """
    lower: int | None = None
    upper: int | None = None
    rest: list[Expr] = []
    for conjunct in conjuncts(condition):
        bound = _time_bound(conjunct, left_time, right_time)
        if bound is None:
            rest.append(conjunct)
            continue
        kind, offset = bound
        if kind == "lower":
            lower = offset if lower is None else max(lower, offset)
        else:
            upper = offset if upper is None else min(upper, offset)
    if lower is None or upper is None:
        return None
    from flowsql.planner.expressions import conjoin

    return lower, upper, conjoin(rest)


def _time_bound(expr: Expr, left_time: int, right_time: int) -> tuple[str, int] | None:
    """A conjunct ``right_time op left_time + offset`` (either way round) as a bound."""
    if not isinstance(expr, Call) or expr.name not in ("lt", "lte", "gt", "gte"):
        return None
    a, b = expr.args
    op = expr.name
    if _offset_of(a, right_time) == 0 and _offset_of(b, left_time) is not None:
        offset = _offset_of(b, left_time)
    elif _offset_of(b, right_time) == 0 and _offset_of(a, left_time) is not None:
        offset = _offset_of(a, left_time)
        op = _FLIP[op]
    else:
        return None
    assert offset is not None
    # right <= left + off / right < left + off (ms precision: strict means off - 1)
    if op == "lte":
        return "upper", offset
    if op == "lt":
        return "upper", offset - 1
    if op == "gte":
        return "lower", offset
    return "lower", offset + 1


def _offset_of(expr: Expr, cid: int) -> int | None:
    """k when ``expr`` is ``column cid`` plus or minus a constant interval of k ms."""
    if isinstance(expr, ColumnRef):
        return 0 if expr.cid == cid else None
    if isinstance(expr, Call) and expr.name in ("add", "subtract") and len(expr.args) == 2:
        base, amount = expr.args
        if not isinstance(amount, Literal):
            return None
        inner = _offset_of(base, cid)
        ms = interval_ms(amount.value)
        if inner is None or ms is None:
            return None
        return inner + ms if expr.name == "add" else inner - ms
    return None
