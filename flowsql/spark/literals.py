"""Constants and casts as PySpark source text.

A literal is always written with the exact Spark type of its Arrow type (``F.lit('1.50')
.cast('decimal(3,2)')``) so typing never depends on Spark's literal inference. A fractional number cast to an integer
is truncated toward zero, as by the local engine (Flink's rule; Spark's own, too), and a
value out of range fails (Spark's ANSI mode, on by default); a string with a fraction is
read as an exact decimal first, since ANSI Spark refuses ``CAST('2.5' AS INT)``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from typing import Any

import pyarrow as pa

from flowsql.errors import PlanError
from flowsql.planner import types as T
from flowsql.spark.spark_types import spark_type

_INT32 = (-(2**31), 2**31 - 1)


def cast(text: str, target: pa.DataType) -> str:
    """``text.cast('<type>')`` (no cast to the NULL type, which Spark infers by itself)."""
    if T.is_null(target):
        return text
    return f"{text}.cast({spark_type(target)!r})"


def convert(text: str, source: pa.DataType, target: pa.DataType) -> str:
    """A SQL CAST of a value of type ``source`` to ``target`` (truncating to integers)."""
    if T.is_null(target) or (not T.is_null(source) and spark_type(source) == spark_type(target)):
        return text
    if T.is_integer(target) and T.is_string(source):
        text = cast(f"F.trim({text})", pa.decimal128(T.MAX_DECIMAL_PRECISION, 12))
    if T.is_string(target) and pa.types.is_timestamp(source) and source.tz is None:
        return _timestamp_text(text, source.unit)
    return cast(text, target)


#: Spark's pattern for the fraction digits of a TIMESTAMP of each Arrow unit
_FRACTIONS = {"s": "", "ms": ".SSS", "us": ".SSSSSS", "ns": ".SSSSSS"}


def _timestamp_text(text: str, unit: str) -> str:
    """A TIMESTAMP as text with exactly its precision's fraction digits, as the local
    engine (and Flink) print it; Spark's own cast drops trailing zeros. Spark keeps
    microseconds, so nanosecond values print their last three digits as zeros."""
    formatted = f"F.date_format({text}, {'yyyy-MM-dd HH:mm:ss' + _FRACTIONS[unit]!r})"
    return f"F.concat({formatted}, F.lit('000'))" if unit == "ns" else formatted


def python_value(value: Any) -> str:
    """A Python literal for a bool, int, float or str (floats keep inf and nan)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, bool | int | float | str) or value is None:
        return repr(value)
    raise PlanError(f"the Spark engine cannot use the constant {value!r} here")


def literal(value: Any, dtype: pa.DataType) -> str:
    """Source text of a constant of Arrow type ``dtype`` (``value`` None is NULL)."""
    if T.is_null(dtype):
        return "F.lit(None)"
    if value is None:
        return cast("F.lit(None)", dtype)
    if pa.types.is_boolean(dtype):
        return f"F.lit({bool(value)!r})"
    if T.is_integer(dtype):
        text = f"F.lit({int(value)!r})"
        fits = pa.types.is_int32(dtype) and _INT32[0] <= int(value) <= _INT32[1]
        return text if fits else cast(text, dtype)
    if T.is_float(dtype):
        text = f"F.lit({python_value(float(value))})"
        return text if pa.types.is_float64(dtype) else cast(text, dtype)
    if T.is_decimal(dtype):
        return cast(f"F.lit({format(decimal.Decimal(value), 'f')!r})", dtype)
    if T.is_string(dtype):
        return f"F.lit({str(value)!r})"
    if pa.types.is_date(dtype):
        day = value if isinstance(value, dt.date) else dt.date(1970, 1, 1) + dt.timedelta(value)
        return cast(f"F.lit({day.isoformat()!r})", dtype)
    if pa.types.is_timestamp(dtype):
        if not isinstance(value, dt.datetime):
            value = pa.scalar(value, type=dtype).as_py()
        return cast(f"F.lit({value.replace(tzinfo=None).isoformat(sep=' ')!r})", dtype)
    if T.is_interval(dtype):
        return interval(value)
    raise PlanError(f"the Spark engine does not support constants of type {T.sql_name(dtype)}")


def interval(value: Any) -> str:
    """A month/day/nanosecond interval as ``F.make_interval`` (Spark's calendar interval)."""
    months, days, nanos = interval_parts(value)
    seconds = format(decimal.Decimal(nanos) / 10**9, "f")
    return (f"F.make_interval(F.lit(0), F.lit({months}), F.lit(0), F.lit({days}), F.lit(0), "
            f"F.lit(0), F.lit({seconds!r}).cast('decimal(18,6)'))")


def interval_parts(value: Any) -> tuple[int, int, int]:
    """(months, days, nanoseconds) of an interval constant in any pyarrow spelling."""
    if hasattr(value, "months"):
        return int(value.months), int(value.days), int(value.nanoseconds)
    months, days, nanos = value
    return int(months), int(days), int(nanos)
