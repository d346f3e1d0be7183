"""Conversions between instants (TIMESTAMP_LTZ) and wall-clock values, in the session zone.

TIMESTAMP_LTZ is an Arrow timestamp with ``tz='UTC'``: an instant, the same in every zone.
What depends on ``table.local-time-zone`` is how an instant becomes a wall-clock value
(CAST to TIMESTAMP / STRING / DATE, DATE_FORMAT, FROM_UNIXTIME) and back (CAST to
TIMESTAMP_LTZ, UNIX_TIMESTAMP). The binder makes each such step an explicit call that carries
the zone as a string literal -- ``ltz_to_local(x, zone)`` and ``local_to_ltz(x, zone)`` --
so the runtime, worker processes and the Spark engine read the zone from the plan, never
from a global. Literals are converted here already.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.config.time_zone import tzinfo_of
from flowsql.planner.expressions import Call, Cast, Expr, Literal
from flowsql.sql.literals import cast_value


def is_ltz(dtype: pa.DataType) -> bool:
    return pa.types.is_timestamp(dtype) and dtype.tz is not None


def to_local(expr: Expr, zone: str) -> Expr:
    """The wall-clock TIMESTAMP (same unit) that the instant ``expr`` shows in ``zone``."""
    local = pa.timestamp(expr.dtype.unit)
    if isinstance(expr, Literal):
        value = None if expr.value is None else \
            expr.value.astimezone(tzinfo_of(zone)).replace(tzinfo=None)
        return Literal(value, local)
    return Call("ltz_to_local", (expr, Literal(zone, T.STRING)), local)


def to_instant(expr: Expr, zone: str) -> Expr:
    """The instant (TIMESTAMP_LTZ, same unit) at which ``zone``'s clock shows ``expr``, a
    TIMESTAMP. A time skipped by a daylight-saving change is moved forward by the gap and
    a repeated one is the earlier instant (Java's ``LocalDateTime.atZone``, Flink's rule)."""
    instant = pa.timestamp(expr.dtype.unit, "UTC")
    if isinstance(expr, Literal):
        if expr.value is None:
            return Literal(None, instant)
        zoned = expr.value.replace(tzinfo=tzinfo_of(zone), fold=0)
        # normalizing through UTC moves a skipped wall-clock time forward by the gap
        return Literal(zoned.astimezone(dt.UTC), instant)
    return Call("local_to_ltz", (expr, Literal(zone, T.STRING)), instant)


def zoned_cast(arg: Expr, target: pa.DataType, zone: str) -> Expr | None:
    """CAST(arg AS target) through the session zone when exactly one side is an instant
    (None otherwise: the cast does not depend on the zone)."""
    if is_ltz(arg.dtype) == is_ltz(target) or T.is_null(arg.dtype):
        return None
    if is_ltz(arg.dtype):
        local = to_local(arg, zone)
        return local if local.dtype.equals(target) else _cast(local, target)
    wall = pa.timestamp(target.unit)
    return to_instant(arg if arg.dtype.equals(wall) else _cast(arg, wall), zone)


def _cast(expr: Expr, target: pa.DataType) -> Expr:
    if isinstance(expr, Literal):
        return Literal(cast_value(expr.value, expr.dtype, target), target)
    return Cast(expr, target)
