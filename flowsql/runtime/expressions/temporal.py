"""EXTRACT(field FROM x) and date_trunc(unit, x) over dates and timestamps; PROCTIME().

Fields follow DuckDB: every field is an integer (seconds without their fraction), ``dow``
counts from Sunday = 0, ``week`` is the ISO week, ``epoch`` is seconds since 1970 as a
double. Hour/minute/second of a date are 0. date_trunc keeps the argument's type (the
planner's rule), weeks start on Monday.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.time.watermarks import epoch_ms

_SECONDS_PER_UNIT = {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def _as_timestamp(x: Datum) -> Datum:
    return pc.cast(x, pa.timestamp("s")) if pa.types.is_date(x.type) else x


def _epoch(x: Datum) -> Datum:
    if pa.types.is_date(x.type):
        return pc.multiply(pc.cast(pc.cast(x, pa.int32()), T.FLOAT64), 86_400.0)
    if pa.types.is_timestamp(x.type) and x.type.tz is not None:
        x = pc.cast(x, pa.timestamp(x.type.unit))
    return pc.multiply(pc.cast(pc.cast(x, pa.int64()), T.FLOAT64),
                       _SECONDS_PER_UNIT[x.type.unit])


_FIELDS: dict[str, Callable[[Datum], Datum]] = {
    "extract_year": pc.year,
    "extract_quarter": pc.quarter,
    "extract_month": pc.month,
    "extract_day": pc.day,
    "extract_hour": lambda x: pc.hour(_as_timestamp(x)),
    "extract_minute": lambda x: pc.minute(_as_timestamp(x)),
    "extract_second": lambda x: pc.second(_as_timestamp(x)),
    "extract_dow": lambda x: pc.day_of_week(x, count_from_zero=True, week_start=7),
    "extract_doy": pc.day_of_year,
    "extract_week": pc.iso_week,
    "extract_epoch": _epoch,
}


def _extract(name: str, field: Callable[[Datum], Datum]) -> None:
    @register(name)
    def build(call: Call, args: list[Node]) -> Run:
        run = args[0].run
        return lambda batch: field(run(batch))


for _name, _field in _FIELDS.items():
    _extract(_name, _field)


_TRUNC_UNITS = {"year": "year", "quarter": "quarter", "month": "month", "week": "week",
                "day": "day", "hour": "hour", "minute": "minute", "second": "second",
                "millisecond": "millisecond", "microsecond": "microsecond",
                "years": "year", "months": "month", "days": "day", "hours": "hour",
                "minutes": "minute", "seconds": "second", "dayofmonth": "day"}


@register("date_trunc")
def _date_trunc(call: Call, args: list[Node]) -> Run:
    unit_node, value = args
    if not unit_node.constant:
        raise ExecutionError(f"the unit of date_trunc must be a constant in {call}")
    unit_name = str(unit_node.python_value).lower()
    unit = _TRUNC_UNITS.get(unit_name)
    if unit is None:
        raise ExecutionError(f"unsupported date_trunc unit '{unit_name}'")
    run = value.run
    if pa.types.is_date(call.args[1].dtype) and unit in ("hour", "minute", "second",
                                                          "millisecond", "microsecond"):
        return run
    return lambda batch: pc.floor_temporal(run(batch), unit=unit, week_starts_monday=True)


@register("proctime", strict=False)
def _proctime(call: Call, args: list[Node]) -> Run:
    """Flink's PROCTIME(): the wall-clock time when a batch is evaluated, as TIMESTAMP_LTZ(3)
    (epoch milliseconds, UTC). One value per batch -- its rows pass the operator together --
    read afresh for every batch (the compiler never folds a call without arguments)."""
    dtype = call.dtype

    def now(batch: pa.RecordBatch) -> Datum:
        return pa.scalar(epoch_ms(), dtype)

    return now
