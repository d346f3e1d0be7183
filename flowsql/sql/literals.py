"""Typed literals from SQL text: numbers, strings, dates, intervals, and folding casts of
literals (``DATE '1998-12-01'`` is a cast of a string literal, folded at bind time)."""

from __future__ import annotations

import datetime as dt
import decimal
import re
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner import types as T
from flowsql.planner.expressions import Literal

#: a context holding any DECIMAL(38, s) value exactly (Python's default context rounds to 28
#: digits, and ``quantize`` beyond them is an InvalidOperation)
EXACT_DECIMALS = decimal.Context(prec=2 * T.MAX_DECIMAL_PRECISION + 2,
                                 traps=[decimal.InvalidOperation, decimal.DivisionByZero,
                                        decimal.Overflow])


def number_literal(text: str) -> Literal:
    """Integers are INTEGER or BIGINT (DECIMAL(38, 0) beyond BIGINT, DOUBLE beyond 38
    digits); a decimal point gives DECIMAL(p, s); an exponent
    gives DOUBLE (DuckDB's literal typing)."""
    if "e" in text.lower():
        return Literal(float(text), T.FLOAT64)
    if "." in text:
        whole, _, frac = text.partition(".")
        whole = whole.lstrip("-+").lstrip("0")
        scale = len(frac)
        precision = max(len(whole) + scale, 1)
        if precision > T.MAX_DECIMAL_PRECISION:
            return Literal(float(text), T.FLOAT64)
        return Literal(decimal.Decimal(text), pa.decimal128(max(precision, scale, 1), scale))
    value = int(text)
    if -(2**31) <= value < 2**31:
        return Literal(value, T.INT32)
    if -(2**63) <= value < 2**63:
        return Literal(value, T.INT64)
    if len(text.lstrip("-+").lstrip("0")) <= T.MAX_DECIMAL_PRECISION:
        return Literal(decimal.Decimal(value), pa.decimal128(T.MAX_DECIMAL_PRECISION, 0))
    # Beyond 38 digits no exact type holds it: DOUBLE, as a decimal literal that long.
    return Literal(float(text), T.FLOAT64)


def cast_value(value: Any, source: pa.DataType, target: pa.DataType) -> Any:
    """Cast one value with the engine's cast kernel; raises ValueError when it cannot."""
    if value is None:
        return None
    if T.is_string(source) and isinstance(value, str):
        value = value.strip()
        if pa.types.is_boolean(target):
            low = value.lower()
            if low in ("true", "t", "yes", "y", "1"):
                return True
            if low in ("false", "f", "no", "n", "0"):
                return False
            raise ValueError(value)
        if pa.types.is_date(target):
            return dt.date.fromisoformat(value[:10]) if len(value) >= 10 else _fail(value)
    if T.is_decimal(target) and isinstance(value, int | float | decimal.Decimal) \
            and not isinstance(value, bool):
        return _to_decimal(value, target)
    if T.is_integer(target) and (T.is_decimal(source) or T.is_float(source)
                                 or (T.is_string(source) and isinstance(value, str))):
        return _to_integer(value, target)
    try:
        arr = pa.array([value], type=source)
        if T.is_string(source) and T.is_decimal(target):
            arr = pc.cast(pc.cast(arr, pa.decimal128(38, target.scale)), target)
        return pc.cast(arr, target, safe=True)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise ValueError(str(e)) from None


def _to_decimal(value: int | float | decimal.Decimal, target: pa.Decimal128Type) -> Any:
    """Exact numeric -> DECIMAL(p, s), rounding half away from zero like DuckDB."""
    quantum = decimal.Decimal(1).scaleb(-target.scale)
    try:
        # Python's default context holds 28 digits; a DECIMAL has up to 38.
        with decimal.localcontext(EXACT_DECIMALS):
            result = decimal.Decimal(str(value)).quantize(quantum,
                                                          rounding=decimal.ROUND_HALF_UP)
    except decimal.InvalidOperation:
        raise ValueError(f"{value} does not fit {target}") from None
    if len(result.as_tuple().digits) > target.precision and result != 0:
        raise ValueError(f"{value} does not fit {target}")
    return result


_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)")


def _to_integer(value: Any, target: pa.DataType) -> int:
    """A fractional number (or its text) as an integer of ``target``: truncated toward zero
    as in Flink and Spark (DuckDB rounds), and range-checked."""
    if isinstance(value, str) and not _PLAIN_NUMBER.fullmatch(value.strip()):
        raise ValueError(f"{value!r} is not a number")
    try:
        number = decimal.Decimal(value.strip() if isinstance(value, str) else value)
    except (decimal.InvalidOperation, TypeError):
        raise ValueError(f"{value!r} is not a number") from None
    if not number.is_finite():
        raise ValueError(f"{value} has no integer value")
    result = int(number)  # int() of a Decimal truncates toward zero
    bits = target.bit_width
    low, high = (0, 2**bits - 1) if pa.types.is_unsigned_integer(target) \
        else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not low <= result <= high:
        raise ValueError(f"{value} is out of the range of {target}")
    return result


def _fail(value: str) -> Any:
    raise ValueError(value)


_UNIT_FACTORS = {
    "year": (12, 0, 0), "years": (12, 0, 0), "quarter": (3, 0, 0), "month": (1, 0, 0),
    "months": (1, 0, 0), "week": (0, 7, 0), "weeks": (0, 7, 0), "day": (0, 1, 0),
    "days": (0, 1, 0), "hour": (0, 0, 3600 * 10**9), "hours": (0, 0, 3600 * 10**9),
    "minute": (0, 0, 60 * 10**9), "minutes": (0, 0, 60 * 10**9),
    "second": (0, 0, 10**9), "seconds": (0, 0, 10**9),
    "millisecond": (0, 0, 10**6), "milliseconds": (0, 0, 10**6),
    "microsecond": (0, 0, 10**3), "microseconds": (0, 0, 10**3),
}


def interval_value(amount: str, unit: str | None) -> tuple[int, int, int]:
    """(months, days, nanoseconds) of ``INTERVAL 'amount' unit`` or ``INTERVAL '3 days'``.

    Raises ValueError for an unknown unit or a non-numeric amount."""
    if unit is None:
        parts = amount.split()
        if len(parts) % 2:
            raise ValueError(amount)
        months = days = nanos = 0
        for i in range(0, len(parts), 2):
            m, d, n = interval_value(parts[i], parts[i + 1])
            months, days, nanos = months + m, days + d, nanos + n
        return months, days, nanos
    factors = _UNIT_FACTORS.get(unit.lower())
    if factors is None:
        raise ValueError(f"unknown interval unit {unit}")
    number = decimal.Decimal(amount.strip())
    m, d, n = factors
    if number != number.to_integral_value() and (m or d):
        raise ValueError(f"fractional {unit} intervals are not supported")
    return int(number * m), int(number * d), int(number * n)
