"""Flink's unit-based temporal functions: TIMESTAMPDIFF(unit, a, b) and CEIL(x TO unit).

``timestampdiff`` counts the whole units elapsed from ``a`` to ``b``, truncated toward zero
(Flink/Calcite): 10:59 to 11:00 is 0 hours. A month has elapsed once adding it (with the day
clamped to the month's length) does not pass ``b``: 2024-01-31 to 2024-02-29 is one month,
2024-01-30 10:00 to 2024-02-29 09:00 none. Quarters and years are 3 and 12 such months;
shorter units divide the exact elapsed time. The result is an
INT; a count outside its range is an error.

``ceil_temporal`` rounds up to the unit (a value already on a boundary stays), the
counterpart of ``date_trunc`` which FLOOR(x TO unit) binds to.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import as_array, filled_numpy, with_nulls_of

_MICROS = {"microsecond": 1, "millisecond": 1_000, "second": 1_000_000,
           "minute": 60_000_000, "hour": 3_600_000_000, "day": 86_400_000_000,
           "week": 7 * 86_400_000_000}
_MONTHS = {"month": 1, "quarter": 3, "year": 12}
#: Units as Flink spells them (SQL_TSI_* are the JDBC aliases Calcite accepts).
UNITS = {**{u: u for u in (*_MICROS, *_MONTHS)},
         **{f"sql_tsi_{u}": u for u in (*_MICROS, *_MONTHS)}, "frac_second": "microsecond"}


def _constant_unit(call: Call, node: Node) -> str:
    if not node.constant:
        raise ExecutionError(f"the unit of {call.name} must be a constant")
    unit = UNITS.get(str(node.python_value).lower())
    if unit is None:
        raise ExecutionError(f"unsupported time unit '{node.python_value}' in {call.name}")
    return unit


def _micros(values: pa.Array) -> np.ndarray:
    """Microseconds since the epoch (dates are midnight), NULL as 0 (callers mask)."""
    if pa.types.is_date(values.type):
        values = pc.cast(values, pa.timestamp("us"))
    elif values.type.unit != "us" or values.type.tz is not None:
        values = pc.cast(values, pa.timestamp("us", values.type.tz), safe=False)
    return filled_numpy(pc.cast(values, pa.int64()), 0).astype(np.int64)


_DAY_US = 86_400_000_000


def _add_months(days: np.ndarray, months: np.ndarray) -> np.ndarray:
    """Day numbers shifted by whole months, the day clamped to the target month's length."""
    d = days.astype("datetime64[D]")
    month = d.astype("datetime64[M]")
    target = month + months.astype("timedelta64[M]")
    last = (target + np.timedelta64(1, "M")).astype("datetime64[D]") - np.timedelta64(1, "D")
    return np.minimum(target.astype("datetime64[D]") + (d - month.astype("datetime64[D]")),
                      last).astype(np.int64)


def _months_forward(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The largest ``m`` with ``start + m months <= end`` (for ``start <= end``), where adding
    months clamps the day (Jan 31 + 1 month = Feb 29): Calcite's rule, so Jan 31 to Feb 29
    is one month."""
    s_day, s_time = np.divmod(start, _DAY_US)
    e_day, e_time = np.divmod(end, _DAY_US)
    months = (e_day.astype("datetime64[D]").astype("datetime64[M]")
              - s_day.astype("datetime64[D]").astype("datetime64[M]")).astype(np.int64)
    reached = _add_months(s_day, months) * _DAY_US + s_time
    return np.where(reached > e_day * _DAY_US + e_time, months - 1, months)


def _month_count(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Whole months from ``start`` to ``end`` (microseconds), truncated toward zero."""
    backwards = end < start
    low, high = np.where(backwards, end, start), np.where(backwards, start, end)
    months = _months_forward(low, high)
    return np.where(backwards, -months, months)


@register("timestampdiff")
def _timestampdiff(call: Call, args: list[Node]) -> Run:
    unit = _constant_unit(call, args[0])
    start_run, end_run = args[1].run, args[2].run

    def diff(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        start, end = as_array(start_run(batch), n), as_array(end_run(batch), n)
        a, b = _micros(start), _micros(end)
        if unit in _MONTHS:
            counts = _month_count(a, b)
            per = _MONTHS[unit]
        else:
            counts = b - a
            per = _MICROS[unit]
        whole = np.sign(counts) * (np.abs(counts) // per)
        if whole.size and (whole.max() > 2**31 - 1 or whole.min() < -(2**31)):
            raise ExecutionError(f"TIMESTAMPDIFF result out of the INT range in {call}")
        return with_nulls_of(pa.array(whole.astype(np.int32)), start, end)

    return diff


@register("ceil_temporal")
def _ceil_temporal(call: Call, args: list[Node]) -> Run:
    unit = _constant_unit(call, args[0])
    run = args[1].run
    if pa.types.is_date(call.args[1].dtype) and unit in ("hour", "minute", "second",
                                                          "millisecond", "microsecond"):
        return run
    def ceil(batch: pa.RecordBatch) -> Datum:
        value = run(batch)
        # A value on a boundary stays; pyarrow's ceil_temporal moves some of them (a month's
        # first midnight) a whole unit up.
        floor = pc.floor_temporal(value, unit=unit, week_starts_monday=True)
        up = pc.ceil_temporal(value, unit=unit, week_starts_monday=True)
        return pc.if_else(pc.equal(floor, value), value, up)
    return ceil
