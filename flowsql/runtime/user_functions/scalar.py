"""Calling a scalar user-defined function on a batch.

The function receives one argument per SQL argument: a ``pyarrow.Array`` of the batch's
rows, or a ``pyarrow.Scalar`` for a constant argument when another argument is an array
(when every argument is constant, each becomes an array of the batch's length, so the
function can always tell how many rows to return). It is called once per batch.

When the call raises, the batch is retried row by row to find the first row that fails,
and the error names the function and that row's arguments; the row-by-row retry runs
only on failure, so the normal path stays one call per batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import pyarrow as pa

from flowsql.planner.udf import UserFunction
from flowsql.planner.udf_loading import import_function
from flowsql.runtime.user_functions.results import UserFunctionError, as_result_array

__all__ = ["call_scalar", "describe_failure"]

Datum: TypeAlias = "pa.Array | pa.Scalar"


def call_scalar(function: UserFunction, args: Sequence[Datum], length: int,
                labels: Sequence[str]) -> pa.Array:
    """The function's result over ``length`` rows of ``args`` (``labels``: how each
    argument is written in SQL, for error messages)."""
    code = import_function(function.path)
    if args and all(isinstance(a, pa.Scalar) for a in args):
        args = [pa.array([a.as_py()] * length, a.type) for a in args]
    try:
        result = code(*args)
    except Exception as e:
        raise describe_failure(function, code, args, length, labels, e) from None
    return as_result_array(function, result, length)


def describe_failure(function: UserFunction, code: Any, args: Sequence[Datum], length: int,
                     labels: Sequence[str], error: Exception) -> UserFunctionError:
    """The error for a batch on which ``code`` raised ``error``: retried row by row, it
    names the first failing row's arguments (or the batch, when no single row fails)."""
    for row in range(length):
        one = [a.slice(row, 1) if isinstance(a, pa.Array) else a for a in args]
        try:
            code(*one)
        except Exception as row_error:
            values = ", ".join(f"{label} = {_shown(a, row)}" for label, a in zip(labels, args))
            return UserFunctionError(
                f"function {function.name} failed on the input row with "
                f"{values or 'no arguments'}: {type(row_error).__name__}: {row_error}")
    return UserFunctionError(f"function {function.name} failed on a batch of {length} rows "
                             f"(each row alone succeeds): {type(error).__name__}: {error}")


def _shown(arg: Datum, row: int) -> str:
    value = arg[row] if isinstance(arg, pa.Array) else arg
    python = value.as_py()
    return "NULL" if python is None else repr(python)
