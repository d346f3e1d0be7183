"""Small Arrow helpers shared by the kernel families: broadcasting, numpy round trips,
casting to the planner's type, and per-value fallbacks for non-constant option arguments.

pyarrow kernels take most options (patterns, slice bounds, digits) as scalars only. When SQL
passes a column there, :func:`per_distinct` runs the kernel once per distinct option value
(a loop over distinct values, not over rows), which keeps the common literal case a single
kernel call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.expressions.registry import Datum


def as_array(datum: Datum, length: int) -> pa.Array:
    """An array of ``length`` rows: arrays pass through, scalars are repeated."""
    if isinstance(datum, pa.Scalar):
        if not datum.is_valid:
            return pa.nulls(length, datum.type)
        return pa.repeat(datum, length)
    if isinstance(datum, pa.ChunkedArray):
        return datum.combine_chunks()
    return datum


def typed_null(dtype: pa.DataType) -> pa.Scalar:
    return pa.scalar(None, type=dtype)


def conform(datum: Datum, dtype: pa.DataType) -> Datum:
    """``datum`` as ``dtype`` (the planner's type); a no-op when it already is."""
    if datum.type.equals(dtype):
        return datum
    if pa.types.is_null(datum.type):
        return typed_null(dtype) if isinstance(datum, pa.Scalar) else pa.nulls(len(datum), dtype)
    return pc.cast(datum, dtype)


def filled_numpy(arr: pa.Array, fill: Any) -> np.ndarray:
    """Values of ``arr`` as numpy with nulls replaced by ``fill`` (callers keep the mask)."""
    if arr.null_count:
        arr = pc.fill_null(arr, pa.scalar(fill, type=arr.type))
    return arr.to_numpy(zero_copy_only=False)


def with_nulls_of(values: pa.Array, *sources: Datum) -> pa.Array:
    """``values`` with a NULL wherever any of ``sources`` is NULL."""
    valid: Datum | None = None
    for s in sources:
        if isinstance(s, pa.Scalar):
            if not s.is_valid:
                return pa.nulls(len(values), values.type)
            continue
        if s.null_count:
            v = pc.is_valid(s)
            valid = v if valid is None else pc.and_(valid, v)
    if valid is None:
        return values
    return pc.if_else(valid, values, typed_null(values.type))


def per_distinct(values: Datum, option: Datum, length: int,
                 kernel: Callable[[Datum, Any], Datum], out_type: pa.DataType) -> Datum:
    """Apply ``kernel(values, option_value)`` where the option is a column: once per distinct
    option value, each result kept on the rows carrying that value; NULL options give NULL."""
    if isinstance(option, pa.Scalar):
        if not option.is_valid:
            return typed_null(out_type)
        return kernel(values, option.as_py())
    result: pa.Array = pa.nulls(length, out_type)
    for value in pc.unique(option).to_pylist():
        if value is None:
            continue
        rows = pc.fill_null(pc.equal(option, pa.scalar(value, type=option.type)), False)
        part = as_array(conform(kernel(values, value), out_type), length)
        result = pc.if_else(rows, part, result)
    return result
