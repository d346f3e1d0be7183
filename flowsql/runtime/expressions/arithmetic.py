"""+ - * / % and unary minus, over numbers, dates, timestamps and intervals.

Exactness rules (DuckDB's): integer arithmetic is checked (overflow is an error, never a
wrap-around); decimal arithmetic is exact -- when pyarrow's own result precision would pass
38 digits the operation runs in decimal256 and is cast back to the planner's decimal128,
failing only on a real overflow; ``/`` always divides in double precision (x / 0 is +-inf or
NaN as in DuckDB); ``%`` truncates toward zero (the result has the dividend's sign) and an
exact modulo by zero is an error.

Calendar rules: adding months clamps the day to the target month's length
(2024-01-31 + 1 month = 2024-02-29); date - date is a day count; date + integer adds days.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.decimal_int64 import int64_decimal_op
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import as_array, filled_numpy, with_nulls_of

_CHECKED = {"add": pc.add_checked, "subtract": pc.subtract_checked,
            "multiply": pc.multiply_checked}
_UNCHECKED = {"add": pc.add, "subtract": pc.subtract, "multiply": pc.multiply}


def _numeric_operand(datum: Datum, result: pa.DataType) -> Datum:
    t = datum.type
    if T.is_float(result) and not t.equals(T.FLOAT64):
        return pc.cast(datum, T.FLOAT64)
    if T.is_integer(result) and not t.equals(T.INT64):
        return pc.cast(datum, T.INT64)
    if T.is_decimal(result) and T.is_integer(t):
        return pc.cast(datum, T.integer_as_decimal(t))
    return datum


def _arrow_decimal_precision(op: str, a: pa.DataType, b: pa.DataType) -> int:
    """The precision pyarrow's kernel gives ``a op b`` (it refuses anything above 38)."""
    if op == "multiply":
        return a.precision + b.precision + 1
    scale = max(a.scale, b.scale)
    return scale + max(a.precision - a.scale, b.precision - b.scale) + 1


def _decimal256(datum: Datum) -> Datum:
    # 37 digits per operand keeps even a product within decimal256's 76 digits; a value
    # that needs the 38th digit fails the cast and is reported as an overflow.
    t = datum.type
    return pc.cast(datum, pa.decimal256(min(t.precision, 37), t.scale))


def _numeric(op: str, call: Call) -> Callable[[Datum, Datum], Datum]:
    result = call.dtype
    if T.is_decimal(result):
        def decimal_op(a: Datum, b: Datum) -> Datum:
            fast = int64_decimal_op(op, a, b, result)
            if fast is not None:
                return fast
            a, b = _numeric_operand(a, result), _numeric_operand(b, result)
            if _arrow_decimal_precision(op, a.type, b.type) > T.MAX_DECIMAL_PRECISION:
                try:
                    return pc.cast(_UNCHECKED[op](_decimal256(a), _decimal256(b)), result)
                except pa.ArrowInvalid:
                    raise ExecutionError(f"decimal overflow: the result of {call} does not "
                                         f"fit {T.sql_name(result)}") from None
            return _UNCHECKED[op](a, b)
        return decimal_op
    kernel = _CHECKED[op] if T.is_integer(result) else _UNCHECKED[op]

    def number_op(a: Datum, b: Datum) -> Datum:
        try:
            return kernel(_numeric_operand(a, result), _numeric_operand(b, result))
        except pa.ArrowInvalid as e:
            if "overflow" in str(e).lower():
                raise ExecutionError(f"integer overflow in {call} ({T.sql_name(result)})") \
                    from None
            raise
    return number_op


# -- calendar arithmetic ---------------------------------------------------------------------

_INTERVAL_LAYOUT = np.dtype([("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")])


def _interval_parts(datum: Datum, length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(months, days, nanoseconds) of an interval datum as numpy arrays (NULL -> 0)."""
    if isinstance(datum, pa.Scalar):
        v = datum.value if datum.is_valid else None
        m, d, n = (v.months, v.days, v.nanoseconds) if v is not None else (0, 0, 0)
        return (np.full(length, m, np.int64), np.full(length, d, np.int64),
                np.full(length, n, np.int64))
    raw = np.frombuffer(datum.buffers()[1], dtype=_INTERVAL_LAYOUT,
                        count=datum.offset + len(datum))[datum.offset:]
    return (raw["months"].astype(np.int64), raw["days"].astype(np.int64),
            raw["nanos"].astype(np.int64))


def _make_interval(months: np.ndarray, days: np.ndarray, nanos: np.ndarray) -> pa.Array:
    raw = np.empty(len(months), dtype=_INTERVAL_LAYOUT)
    raw["months"], raw["days"], raw["nanos"] = months, days, nanos
    return pa.Array.from_buffers(T.INTERVAL, len(months), [None, pa.py_buffer(raw.tobytes())])


def _add_months(days: np.ndarray, months: np.ndarray) -> np.ndarray:
    """Day numbers shifted by whole months, clamping the day of month (Jan 31 + 1 month is
    the last day of February)."""
    d = days.astype("datetime64[D]")
    month = d.astype("datetime64[M]")
    into = d - month.astype("datetime64[D]")
    target = month + months.astype("timedelta64[M]")
    last = (target + np.timedelta64(1, "M")).astype("datetime64[D]") - np.timedelta64(1, "D")
    return np.minimum(target.astype("datetime64[D]") + into, last).astype(np.int64)


_UNIT_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000,
                 "ns": 86_400_000_000_000}
_NANOS_PER_UNIT = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def _shift(values: Datum, interval: Datum, sign: int, result: pa.DataType,
           length: int) -> pa.Array:
    """date/timestamp +- interval, computed on day numbers / epoch units with numpy."""
    arr = as_array(values, length)
    months, days, nanos = _interval_parts(interval, length)
    months, days, nanos = months * sign, days * sign, nanos * sign
    if pa.types.is_date(arr.type):
        base = filled_numpy(pc.cast(arr, pa.int32()), 0).astype(np.int64)
        shifted = _add_months(base, months) + days if months.any() else base + days
        if nanos.any():
            micros = shifted * _UNIT_PER_DAY["us"] + nanos // 1000
            out = pa.array(micros, pa.timestamp("us"))
            out = pc.cast(out, result, safe=False) if pa.types.is_date(result) else out
        else:
            out = pc.cast(pa.array(shifted.astype(np.int32)), pa.date32())
    else:
        unit = arr.type.unit
        per_day = _UNIT_PER_DAY[unit]
        ticks = filled_numpy(pc.cast(arr, pa.int64()), 0)
        day, time_of_day = np.divmod(ticks, per_day)
        if months.any():
            day = _add_months(day, months)
        ticks = (day + days) * per_day + time_of_day + nanos // _NANOS_PER_UNIT[unit]
        out = pa.array(ticks, pa.timestamp(unit, arr.type.tz))
    return with_nulls_of(out, values, interval)


def _days(datum: Datum) -> Datum:
    return pc.cast(pc.cast(datum, pa.int32()), pa.int64())


def _date_plus_days(date: Datum, count: Datum, sign: int) -> Datum:
    total = (pc.add_checked if sign > 0 else pc.subtract_checked)(_days(date), pc.cast(count, pa.int64()))
    return pc.cast(pc.cast(total, pa.int32()), pa.date32())


def _interval_op(op: str, a: Datum, b: Datum, length: int) -> pa.Array:
    am, ad, an = _interval_parts(a, length)
    if op == "multiply":
        k = filled_numpy(as_array(pc.cast(b, pa.int64()), length), 0)
        return with_nulls_of(_make_interval(am * k, ad * k, an * k), a, b)
    bm, bd, bn = _interval_parts(b, length)
    s = 1 if op == "add" else -1
    return with_nulls_of(_make_interval(am + s * bm, ad + s * bd, an + s * bn), a, b)


def _temporal(op: str, call: Call, a_node: Node, b_node: Node) -> Run | None:
    """The calendar form of ``op`` for these argument types, or None for plain numbers."""
    ta, tb = call.args[0].dtype, call.args[1].dtype
    if not (T.is_temporal(ta) or T.is_temporal(tb) or T.is_interval(ta) or T.is_interval(tb)):
        return None
    result = call.dtype

    def both(batch: pa.RecordBatch) -> tuple[Datum, Datum]:
        return a_node.run(batch), b_node.run(batch)

    if T.is_interval(ta) and T.is_interval(tb) or (op == "multiply" and T.is_interval(ta)):
        return lambda batch: _interval_op(op, *both(batch), batch.num_rows)
    if op in ("add", "subtract") and T.is_temporal(ta) and T.is_interval(tb):
        sign = 1 if op == "add" else -1
        return lambda batch: _shift(*both(batch), sign, result, batch.num_rows)
    if op == "add" and T.is_interval(ta) and T.is_temporal(tb):
        return lambda batch: _shift(b_node.run(batch), a_node.run(batch), 1, result,
                                    batch.num_rows)
    if op in ("add", "subtract") and pa.types.is_date(ta) and T.is_integer(tb):
        sign = 1 if op == "add" else -1
        return lambda batch: _date_plus_days(*both(batch), sign)
    if op == "add" and T.is_integer(ta) and pa.types.is_date(tb):
        return lambda batch: _date_plus_days(b_node.run(batch), a_node.run(batch), 1)
    if op == "subtract" and pa.types.is_date(ta) and pa.types.is_date(tb):
        return lambda batch: pc.subtract(_days(a_node.run(batch)), _days(b_node.run(batch)))
    if op == "subtract" and pa.types.is_timestamp(ta) and pa.types.is_timestamp(tb):
        return lambda batch: pc.subtract(*both(batch))
    raise ExecutionError(f"unsupported operand types in {call}")


def _binary(op: str) -> None:
    @register(op)
    def build(call: Call, args: list[Node]) -> Run:
        a, b = args
        temporal = _temporal(op, call, a, b)
        if temporal is not None:
            return temporal
        kernel = _numeric(op, call)
        return lambda batch: kernel(a.run(batch), b.run(batch))


for _op in ("add", "subtract", "multiply"):
    _binary(_op)


@register("divide")
def _divide(call: Call, args: list[Node]) -> Run:
    a, b = args
    return lambda batch: pc.divide(pc.cast(a.run(batch), T.FLOAT64),
                                   pc.cast(b.run(batch), T.FLOAT64))


@register("negate")
def _negate(call: Call, args: list[Node]) -> Run:
    (a,) = args
    t = call.args[0].dtype
    if T.is_interval(t):
        def negate_interval(batch: pa.RecordBatch) -> Datum:
            value = a.run(batch)
            m, d, n = _interval_parts(value, batch.num_rows)
            return with_nulls_of(_make_interval(-m, -d, -n), value)
        return negate_interval
    if T.is_integer(t):
        def negate_integer(batch: pa.RecordBatch) -> Datum:
            try:
                return pc.negate_checked(pc.cast(a.run(batch), T.INT64))
            except pa.ArrowInvalid:
                raise ExecutionError(f"integer overflow in {call}") from None
        return negate_integer
    return lambda batch: pc.negate(a.run(batch))


# -- modulo ---------------------------------------------------------------------------------

def _division_by_zero(call: Call) -> ExecutionError:
    return ExecutionError(f"division by zero in {call}")


def _unscaled(arr: pa.Array) -> np.ndarray:
    """The unscaled integers of a decimal128 array whose precision is at most 18 (their low
    64-bit words); NULL slots hold arbitrary values."""
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64,
                          count=2 * (arr.offset + len(arr)))
    return words[2 * arr.offset::2].copy()


def _from_unscaled(values: np.ndarray, dtype: pa.DataType) -> pa.Array:
    words = np.empty(2 * len(values), dtype=np.int64)
    words[0::2] = values
    words[1::2] = values >> 63
    return pa.Array.from_buffers(dtype, len(values), [None, pa.py_buffer(words.tobytes())])


def _decimal_modulo(call: Call, a: pa.Array, b: pa.Array) -> pa.Array:
    result = call.dtype
    if result.precision <= 18:
        work = pa.decimal128(18, result.scale)
        x = _unscaled(pc.cast(a, work))
        y = _unscaled(pc.cast(b, work))
        valid = ~(filled_numpy(pc.is_null(a), True) | filled_numpy(pc.is_null(b), True))
        if (y[valid] == 0).any():
            raise _division_by_zero(call)
        remainder = np.fmod(x, np.where(valid, y, 1))
        return with_nulls_of(_from_unscaled(remainder, work), a, b)
    # Wide decimals are rare in practice; exact Python decimals keep them correct.
    out: list[decimal.Decimal | None] = []
    for x, y in zip(a.to_pylist(), b.to_pylist()):
        if x is None or y is None:
            out.append(None)
        elif y == 0:
            raise _division_by_zero(call)
        else:
            out.append(x - y * int(decimal.Decimal(x / y).to_integral_value(decimal.ROUND_DOWN)))
    return pa.array(out, result)


@register("modulo")
def _modulo(call: Call, args: list[Node]) -> Run:
    a_node, b_node = args
    result = call.dtype

    def modulo(batch: pa.RecordBatch) -> Datum:
        n = batch.num_rows
        a = as_array(_numeric_operand(a_node.run(batch), result), n)
        b = as_array(_numeric_operand(b_node.run(batch), result), n)
        if T.is_decimal(result):
            return _decimal_modulo(call, a, b)
        if T.is_float(result):
            x = filled_numpy(a, 0.0)
            y = filled_numpy(b, 1.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                return with_nulls_of(pa.array(np.fmod(x, y)), a, b)
        x = filled_numpy(a, 0)
        y = filled_numpy(b, 1)
        if (y == 0).any():
            raise _division_by_zero(call)
        return with_nulls_of(pa.array(np.fmod(x, y)), a, b)

    return modulo
