"""What a user function returned, checked against what it declared.

A result must be (or convert with ``pyarrow.array`` to) an array of the declared type;
an implicit widening (int32 for BIGINT, float32 for DOUBLE, ...) is cast, anything else
is an error naming the function. Scalar functions must also return one value per input
row.
"""

from __future__ import annotations

import decimal
from typing import Any

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.udf import UserFunction

__all__ = ["UserFunctionError", "as_result_array", "as_result_scalar"]


class UserFunctionError(ExecutionError):
    """A user-defined function failed or returned something it did not declare."""


def as_result_array(function: UserFunction, value: Any, length: int) -> pa.Array:
    """``value`` (a scalar function's result for ``length`` rows) as an array of the
    declared result type."""
    dtype = function.result_type
    assert dtype is not None
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    elif isinstance(value, pa.Scalar):
        value = pa.array([value.as_py()] * length, value.type) if length != 1 else \
            pa.array([value.as_py()], value.type)
    elif not isinstance(value, pa.Array):
        try:
            value = pa.array(value, type=dtype)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise UserFunctionError(f"function {function.name} returned a "
                                    f"{type(value).__name__} that is not an array of "
                                    f"{T.sql_name(dtype)}: {e}") from None
    if len(value) != length:
        raise UserFunctionError(f"function {function.name} returned {len(value)} values "
                                f"for {length} input rows (a scalar function returns one "
                                "value per row)")
    return _conformed(function, value, dtype)


def as_result_scalar(function: UserFunction, value: Any) -> pa.Scalar:
    """``value`` (an aggregate's result for one group) as a scalar of the declared type."""
    dtype = function.result_type
    assert dtype is not None
    if isinstance(value, pa.Scalar):
        array = pa.array([value.as_py()], value.type)
    else:
        if hasattr(value, "item") and callable(value.item):  # a numpy scalar
            value = value.item()
        if isinstance(value, decimal.Decimal) and pa.types.is_floating(dtype):
            value = float(value)  # DECIMAL arithmetic for a DOUBLE result
        try:
            array = pa.array([value], type=dtype)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise UserFunctionError(f"aggregate function {function.name} returned "
                                    f"{value!r}, which is not a {T.sql_name(dtype)}: "
                                    f"{e}") from None
    return _conformed(function, array, dtype)[0]


def _conformed(function: UserFunction, array: pa.Array, dtype: pa.DataType) -> pa.Array:
    if array.type.equals(dtype):
        return array
    if T.is_null(array.type) or (_kind(array.type) == _kind(dtype) is not None
                                 and T.common_type(array.type, dtype) == dtype):
        return array.cast(dtype)
    raise UserFunctionError(f"function {function.name} returned {T.sql_name(array.type)} "
                            f"values, but declares {T.sql_name(dtype)}")


def _kind(dtype: pa.DataType) -> str | None:
    """The family within which a result is widened to the declared type."""
    t = pa.types
    for kind, test in (("number", lambda d: t.is_integer(d) or t.is_floating(d)),
                       ("decimal", t.is_decimal), ("string", lambda d: t.is_string(d)
                                                   or t.is_large_string(d)),
                       ("binary", lambda d: t.is_binary(d) or t.is_large_binary(d)),
                       ("timestamp", t.is_timestamp), ("date", t.is_date)):
        if test(dtype):
            return kind
    return None
