"""Arrow types <-> their short text names, for plans that travel as JSON.

The text is pyarrow's own ``str(type)`` (``int64``, ``decimal128(15, 2)``,
``timestamp[us, tz=UTC]``), parsed back by a small table and a few patterns. Only the types
SQL columns can have are known; anything else is an ExecutionError at encoding time, so an
unsupported plan fails before it is deployed rather than inside a worker.
"""

from __future__ import annotations

import re

import pyarrow as pa

from flowsql.errors import ExecutionError

_PLAIN = [pa.null(), pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(),
          pa.uint16(), pa.uint32(), pa.uint64(), pa.float16(), pa.float32(), pa.float64(),
          pa.string(), pa.large_string(), pa.string_view(), pa.binary(), pa.large_binary(),
          pa.binary_view(), pa.date32(), pa.date64(), pa.month_day_nano_interval()]
_BY_NAME = {str(t): t for t in _PLAIN}
_DECIMAL = re.compile(r"decimal(128|256)\((\d+), (-?\d+)\)")
_TIMESTAMP = re.compile(r"timestamp\[(s|ms|us|ns)(?:, tz=(.+))?\]")
_TIME = re.compile(r"time(32|64)\[(s|ms|us|ns)\]")
_DURATION = re.compile(r"duration\[(s|ms|us|ns)\]")


def type_name(dtype: pa.DataType) -> str:
    """The text form of ``dtype``; raises ExecutionError for a type that cannot travel."""
    name = str(dtype)
    try:
        same = type_from_name(name).equals(dtype)
    except ExecutionError:
        same = False
    if not same:
        raise ExecutionError(f"type {dtype} cannot be sent to a worker")
    return name


def type_from_name(name: str) -> pa.DataType:
    """Inverse of :func:`type_name`."""
    if name in _BY_NAME:
        return _BY_NAME[name]
    if match := _DECIMAL.fullmatch(name):
        make = pa.decimal128 if match.group(1) == "128" else pa.decimal256
        return make(int(match.group(2)), int(match.group(3)))
    if match := _TIMESTAMP.fullmatch(name):
        return pa.timestamp(match.group(1), tz=match.group(2))
    if match := _TIME.fullmatch(name):
        return (pa.time32 if match.group(1) == "32" else pa.time64)(match.group(2))
    if match := _DURATION.fullmatch(name):
        return pa.duration(match.group(1))
    raise ExecutionError(f"unknown type name '{name}' in a plan description")
