"""Binding of the function calls whose SQL form is not a plain argument list: Flink's
``TIMESTAMPADD(unit, n, x)`` / ``TIMESTAMPDIFF(unit, a, b)`` (a bare unit word),
``FLOOR(x TO unit)`` / ``CEIL(x TO unit)``, ``TRIM(... 'chars' FROM x)``, ``LOG``,
``LOCATE`` / ``POSITION`` with a start, the regular-expression functions, ``OVERLAY``,
``SHA2``, ``TYPEOF``, ``TRY_CAST``, the EXTRACT shortcuts (``YEAR(x)``, ``DAYOFWEEK(x)``,
...), the constants ``PI()`` / ``E()``, the clock readings ``CURRENT_TIMESTAMP``,
``LOCALTIMESTAMP``, ``NOW()`` and ``CURRENT_DATE``, and ``PROCTIME()``.

Each binder maps the sqlglot node to ordinary planner calls, so the optimizer and both
engines see canonical names only. ``SPECIAL`` maps a function key (lower case, no
underscores) to its binder; the expression binder consults it before the generic path.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from flowsql.planner import types as T
from flowsql.planner.config.time_zone import tzinfo_of
from flowsql.planner.expressions import Call, Cast, Expr, Literal
from flowsql.sql.bind_time_zone import is_ltz, to_local
from flowsql.sql.literals import cast_value, interval_value
from flowsql.sql.scope import Scope

if TYPE_CHECKING:
    from flowsql.sql.bind_expressions import ExpressionBinder

SpecialBinder = Callable[["ExpressionBinder", exp.Expression, Scope], Expr | None]

_TIME_UNITS = ("microsecond", "millisecond", "second", "minute", "hour", "day", "week",
               "month", "quarter", "year")
_SUB_DAY = ("microsecond", "millisecond", "second", "minute", "hour")


def _unit_name(binder: ExpressionBinder, node: exp.Expression | None,
               owner: exp.Expression) -> str:
    text = "" if node is None else (node.name or node.sql()).lower()
    text = text.removeprefix("sql_tsi_")
    if text == "frac_second":
        text = "microsecond"
    if text not in _TIME_UNITS:
        raise binder.error(f"unknown time unit '{text}' in '{owner.sql()}'", owner)
    return text


def _temporal(binder: ExpressionBinder, expr: Expr, node: exp.Expression) -> Expr:
    if isinstance(expr, Literal) and T.is_string(expr.dtype):
        return binder.coerce(expr, pa.timestamp("us"), node)
    if not (T.is_temporal(expr.dtype) or T.is_null(expr.dtype)):
        raise binder.error(f"expected a date or timestamp, got {T.sql_name(expr.dtype)} in "
                           f"'{node.sql()}'", node)
    return expr


def _timestampadd(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    """``x + n * INTERVAL '1' unit``; a date stays a date for day units and above."""
    args = list(node.expressions)
    if len(args) != 3:
        raise binder.error("TIMESTAMPADD takes (unit, count, timestamp)", node)
    unit = _unit_name(binder, args[0], node)
    count = binder.bind(args[1], scope)
    if not (T.is_integer(count.dtype) or T.is_null(count.dtype)):
        raise binder.error("TIMESTAMPADD: the count must be an integer", args[1])
    value = _temporal(binder, binder.bind(args[2], scope), args[2])
    if unit in _SUB_DAY and pa.types.is_date(value.dtype):
        value = Cast(value, pa.timestamp("us"))
    step = Literal(interval_value("1", unit), T.INTERVAL)
    shift = Call("multiply", (step, binder.coerce(count, T.INT64)), T.INTERVAL)
    return Call("add", (value, shift), value.dtype)


def _timestampdiff(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    args = list(node.expressions)
    if len(args) != 3:
        raise binder.error("TIMESTAMPDIFF takes (unit, start, end)", node)
    unit = _unit_name(binder, args[0], node)
    start = _temporal(binder, binder.bind(args[1], scope), args[1])
    end = _temporal(binder, binder.bind(args[2], scope), args[2])
    return Call("timestampdiff", (Literal(unit, T.STRING), start, end), T.INT32)


def _floor_ceil(name: str) -> SpecialBinder:
    def bind(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr | None:
        to = node.args.get("to")
        if to is None:
            return None
        unit = _unit_name(binder, to, node)
        value = _temporal(binder, binder.bind(node.this, scope), node.this)
        return Call(name, (Literal(unit, T.STRING), value), value.dtype)
    return bind


def _trim(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr | None:
    chars = node.args.get("expression")
    if chars is None:
        return None
    position = (node.args.get("position") or "BOTH").upper()
    name = {"LEADING": "ltrim_chars", "TRAILING": "rtrim_chars"}.get(position, "trim_chars")
    args = [binder.bind(node.this, scope), binder.bind(chars, scope)]
    return binder.scalar_call(name, args, [node.this, chars], node)


def _log(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    value_node = node.args.get("expression")
    if value_node is None:  # LOG(x) is the natural logarithm in Flink
        return binder.scalar_call("ln", [binder.bind(node.this, scope)], [node.this], node)
    args = [binder.bind(node.this, scope), binder.bind(value_node, scope)]
    args = [binder.coerce(a, T.FLOAT64) for a in args]
    return binder.scalar_call("log", args, [node.this, value_node], node)


def _position(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr | None:
    start = node.args.get("position")
    if start is None:
        return None
    nodes = [node.args["substr"], node.this, start]
    return binder.scalar_call("locate", [binder.bind(n, scope) for n in nodes], nodes, node)


def _regexp_extract(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    group = node.args.get("group") or node.args.get("position")
    nodes = [node.this, node.expression] + ([group] if group is not None else [])
    return binder.scalar_call("regexp_extract", [binder.bind(n, scope) for n in nodes], nodes,
                              node)


def _regexp_replace(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    nodes = [node.this, node.expression, node.args["replacement"]]
    return binder.scalar_call("regexp_replace", [binder.bind(n, scope) for n in nodes], nodes,
                              node)


def _only_this(name: str) -> SpecialBinder:
    def bind(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
        return binder.scalar_call(name, [binder.bind(node.this, scope)], [node.this], node)
    return bind


def _chr(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    nodes = list(node.expressions)
    return binder.scalar_call("chr", [binder.bind(n, scope) for n in nodes], nodes, node)


def _overlay(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    nodes = [node.this, node.expression, node.args["from_"]]
    if node.args.get("for_") is not None:
        nodes.append(node.args["for_"])
    return binder.scalar_call("overlay", [binder.bind(n, scope) for n in nodes], nodes, node)


def _sha2(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    length = node.args.get("length")
    bits = binder.bind(length, scope) if length is not None else Literal(256, T.INT64)
    nodes = [node.this, length or node]
    return binder.scalar_call("sha2", [binder.bind(node.this, scope), bits], nodes, node)


def _typeof(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    return Literal(T.sql_name(binder.bind(node.this, scope).dtype), T.STRING)


def try_cast(arg: Expr, target: pa.DataType) -> Expr:
    """TRY_CAST: a literal that cannot be cast folds to NULL; anything else is a call."""
    if arg.dtype.equals(target):
        return arg
    if isinstance(arg, Literal):
        try:
            return Literal(cast_value(arg.value, arg.dtype, target), target)
        except ValueError:
            return Literal(None, target)
    return Call("try_cast", (arg,), target)


def _extract(field: str, plus: int = 0) -> SpecialBinder:
    def bind(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
        value = _temporal(binder, binder.bind(node.this, scope), node.this)
        if is_ltz(value.dtype):
            value = to_local(value, binder.time_zone)  # the field of the zone's clock
        call: Expr = Call(f"extract_{field}", (value,), T.INT64)
        if plus:
            call = Call("add", (call, Literal(plus, T.INT64)), T.INT64)
        return call
    return bind


def _constant(value: float) -> SpecialBinder:
    return lambda binder, node, scope: Literal(value, T.FLOAT64)


def _now(local: bool) -> SpecialBinder:
    """The query's start time, read once when the query is bound (Flink's batch rule):
    CURRENT_TIMESTAMP / NOW() as an instant, LOCALTIMESTAMP as the wall-clock time of the
    session's ``table.local-time-zone``."""
    def bind(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
        now = binder.query_start()
        if local:
            wall = now.astimezone(tzinfo_of(binder.time_zone)).replace(tzinfo=None)
            return Literal(wall, pa.timestamp("ms"))
        return Literal(now, pa.timestamp("ms", "UTC"))
    return bind


def _current_date(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    """Today's date in the session's ``table.local-time-zone``."""
    return Literal(binder.query_start().astimezone(tzinfo_of(binder.time_zone)).date(), T.DATE)


#: the type of ``PROCTIME()``: Flink's TIMESTAMP_LTZ(3)
PROCTIME_TYPE = pa.timestamp("ms", tz="UTC")


def _proctime(binder: ExpressionBinder, node: exp.Expression, scope: Scope) -> Expr:
    """The wall clock when a batch is evaluated (not the query's start, unlike NOW()). As a
    whole select item (``SELECT *, PROCTIME() AS pt FROM t``) it is a processing-time
    attribute for the windows, OVER aggregates and joins above it, as the computed column
    ``pt AS PROCTIME()`` is."""
    if node.expressions:
        raise binder.error("PROCTIME() takes no arguments", node)
    return Call("proctime", (), PROCTIME_TYPE)


SPECIAL: dict[str, SpecialBinder] = {
    "proctime": _proctime,
    "pi": _constant(math.pi), "e": _constant(math.e),
    "currenttimestamp": _now(local=False), "now": _now(local=False),
    "localtimestamp": _now(local=True), "currentdate": _current_date,
    "timestampadd": _timestampadd, "timestampdiff": _timestampdiff,
    "floor": _floor_ceil("date_trunc"), "ceil": _floor_ceil("ceil_temporal"),
    "trim": _trim, "log": _log, "strposition": _position,
    "regexpextract": _regexp_extract, "regexpreplace": _regexp_replace,
    "initcap": _only_this("initcap"), "chr": _chr, "overlay": _overlay, "sha2": _sha2,
    "sha": _only_this("sha1"), "typeof": _typeof,
    "year": _extract("year"), "quarter": _extract("quarter"), "month": _extract("month"),
    "week": _extract("week"), "dayofyear": _extract("doy"), "dayofmonth": _extract("day"),
    "dayofweek": _extract("dow", plus=1), "hour": _extract("hour"),
    "minute": _extract("minute"), "second": _extract("second"),
}
