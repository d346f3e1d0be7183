"""Flink's unit-based temporal functions: TIMESTAMPDIFF(unit, a, b) and CEIL(x TO unit).

``timestampdiff`` counts the whole units elapsed from ``a`` to ``b``, truncated toward zero
(Flink/Calcite): 10:59 to 11:00 is 0 hours, 2024-01-31 to 2024-02-29 is 0 months because
the 31st was not reached again. Months, quarters and years compare the calendar month and
then the day and time of day; shorter units divide the exact elapsed time. The result is an
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


def _month_count(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Whole months from ``start`` to ``end`` (microseconds), truncated toward zero."""
    s, e = start.astype("datetime64[us]"), end.astype("datetime64[us]")
    months = (e.astype("datetime64[M]") - s.astype("datetime64[M]")).astype(np.int64)
    # Position inside the month (day and time of day): a later month counts only once that
    # position is reached again.
    s_in = s - s.astype("datetime64[M]").astype("datetime64[us]")
    e_in = e - e.astype("datetime64[M]").astype("datetime64[us]")
    months = np.where((months > 0) & (e_in < s_in), months - 1, months)
    return np.where((months < 0) & (e_in > s_in), months + 1, months)


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
    return lambda batch: pc.ceil_temporal(run(batch), unit=unit, week_starts_monday=True)
