"""SQL types are Arrow types; this module holds the typing rules of SQL over them.

The rules follow DuckDB where SQL engines disagree (DuckDB is our oracle): ``/`` is float
division, decimals stay exact under ``+ - *`` with precision capped at 38, ``AVG`` is DOUBLE.
The runtime casts every computed value to the type these rules predict, so the planner's
types are the contract.
"""

from __future__ import annotations

import pyarrow as pa

MAX_DECIMAL_PRECISION = 38

BOOL = pa.bool_()
INT32 = pa.int32()
INT64 = pa.int64()
FLOAT64 = pa.float64()
STRING = pa.string()
DATE = pa.date32()
NULL = pa.null()
INTERVAL = pa.month_day_nano_interval()


def is_integer(t: pa.DataType) -> bool:
    return pa.types.is_integer(t)


def is_decimal(t: pa.DataType) -> bool:
    return pa.types.is_decimal(t)


def is_float(t: pa.DataType) -> bool:
    return pa.types.is_floating(t)


def is_numeric(t: pa.DataType) -> bool:
    return is_integer(t) or is_decimal(t) or is_float(t)


def is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t)


def is_null(t: pa.DataType) -> bool:
    return pa.types.is_null(t)


def is_interval(t: pa.DataType) -> bool:
    return pa.types.is_interval(t)


def normalize_storage_type(t: pa.DataType) -> pa.DataType:
    """The type a column has inside the engine, whatever the file stored.

    String views and large strings become plain strings, dictionaries their value type, so
    that every kernel sees one representation per SQL type.
    """
    if pa.types.is_string_view(t) or pa.types.is_large_string(t):
        return STRING
    if pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_dictionary(t):
        return normalize_storage_type(t.value_type)
    if pa.types.is_timestamp(t) and t.tz is None and t.unit == "ns":
        return pa.timestamp("us")
    return t


def integer_as_decimal(t: pa.DataType) -> pa.DataType:
    """The decimal that holds every value of an integer type exactly."""
    digits = {8: 3, 16: 5, 32: 10, 64: 19}[t.bit_width]
    return pa.decimal128(digits, 0)


def _decimal(precision: int, scale: int) -> pa.DataType:
    precision = max(1, min(precision, MAX_DECIMAL_PRECISION))
    return pa.decimal128(precision, min(scale, precision))


def common_type(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type both sides are cast to for comparison, CASE branches, UNION, IN, COALESCE.

    Returns None when no implicit conversion exists (the binder reports a type error).
    """
    if a.equals(b):
        return a
    if is_null(a):
        return b
    if is_null(b):
        return a
    if is_integer(a) and is_integer(b):
        return a if a.bit_width >= b.bit_width else b
    if is_numeric(a) and is_numeric(b):
        if is_float(a) or is_float(b):
            return FLOAT64
        da = integer_as_decimal(a) if is_integer(a) else a
        db = integer_as_decimal(b) if is_integer(b) else b
        scale = max(da.scale, db.scale)
        whole = max(da.precision - da.scale, db.precision - db.scale)
        return _decimal(whole + scale, scale)
    if is_string(a) and is_string(b):
        return STRING
    if is_temporal(a) and is_temporal(b):
        if pa.types.is_timestamp(a):
            return a
        if pa.types.is_timestamp(b):
            return b
        return a
    # A string literal compared with a date/number is cast to the other side (as DuckDB does).
    if is_string(a) and (is_temporal(b) or is_numeric(b)):
        return b
    if is_string(b) and (is_temporal(a) or is_numeric(a)):
        return a
    if pa.types.is_boolean(a) and pa.types.is_boolean(b):
        return BOOL
    return None


def arithmetic_type(op: str, a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """Result type of ``a op b`` for op in + - * / %; None when undefined.

    Date/interval arithmetic: date +/- interval -> date (timestamp stays timestamp),
    date - date -> integer days (DuckDB), date +/- integer -> date.
    """
    if is_null(a) and is_null(b):
        return NULL
    if is_null(a):
        a = b
    if is_null(b):
        b = a
    if is_temporal(a) or is_temporal(b) or is_interval(a) or is_interval(b):
        if op in "+-" and is_temporal(a) and (is_interval(b) or is_integer(b)):
            return a
        if op == "+" and is_temporal(b) and (is_interval(a) or is_integer(a)):
            return b
        if op == "-" and pa.types.is_date(a) and pa.types.is_date(b):
            return INT64
        if op == "-" and pa.types.is_timestamp(a) and pa.types.is_timestamp(b):
            return pa.duration(a.unit)
        if is_interval(a) and is_interval(b) and op in "+-":
            return INTERVAL
        if op == "*" and is_interval(a) and is_integer(b):
            return INTERVAL
        return None
    if not (is_numeric(a) and is_numeric(b)):
        return None
    if op == "/":
        return FLOAT64
    if is_float(a) or is_float(b):
        return FLOAT64
    if is_integer(a) and is_integer(b):
        return INT64
    da = integer_as_decimal(a) if is_integer(a) else a
    db = integer_as_decimal(b) if is_integer(b) else b
    if op in "+-":
        scale = max(da.scale, db.scale)
        whole = max(da.precision - da.scale, db.precision - db.scale)
        return _decimal(whole + scale + 1, scale)
    if op == "*":
        return _decimal(da.precision + db.precision, da.scale + db.scale)
    if op == "%":
        scale = max(da.scale, db.scale)
        whole = max(da.precision - da.scale, db.precision - db.scale)
        return _decimal(whole + scale, scale)
    return None


def sum_type(t: pa.DataType) -> pa.DataType:
    if is_integer(t) or is_null(t):
        return INT64
    if is_decimal(t):
        return pa.decimal128(MAX_DECIMAL_PRECISION, t.scale)
    return FLOAT64


def sql_name(t: pa.DataType) -> str:
    """The SQL spelling of a type, for DESCRIBE and error messages."""
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_int8(t):
        return "TINYINT"
    if pa.types.is_int16(t):
        return "SMALLINT"
    if pa.types.is_int32(t):
        return "INTEGER"
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_float32(t):
        return "FLOAT"
    if pa.types.is_float64(t):
        return "DOUBLE"
    if is_decimal(t):
        return f"DECIMAL({t.precision}, {t.scale})"
    if is_string(t):
        return "VARCHAR"
    if pa.types.is_date(t):
        return "DATE"
    if pa.types.is_timestamp(t):
        precision = {"s": 0, "ms": 3, "us": 6, "ns": 9}[t.unit]
        return f"TIMESTAMP({precision})" if t.tz is None else f"TIMESTAMP_LTZ({precision})"
    if pa.types.is_time(t):
        return "TIME"
    if is_interval(t):
        return "INTERVAL"
    if is_null(t):
        return "NULL"
    if pa.types.is_binary(t):
        return "BYTES"
    return str(t).upper()
