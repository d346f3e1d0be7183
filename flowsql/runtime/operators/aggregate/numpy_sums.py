"""Sums as numpy arrays: integers as int64, floats as float64, decimals exactly.

A SUM keeps the result type of the batch hash aggregate (``types.sum_type``: BIGINT for
integers, DOUBLE for floats, DECIMAL(38, s) for DECIMAL(p, s)). Running sums are computed
in numpy, so a decimal column becomes its unscaled integers (``decimals.unscaled``): int64
while every input fits and the sum provably cannot overflow, Python ints in an object array
otherwise (exact whatever the size; a per-value conversion, taken only for values beyond
18 digits).
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner import types as T
from flowsql.runtime.kernels.decimals import from_unscaled, unscaled

_INT64_SAFE = float(2 ** 62)


def as_array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return column


def valid_mask(column: pa.Array) -> np.ndarray:
    return column.is_valid().to_numpy(zero_copy_only=False)


def numbers(columns: Sequence[pa.Array], sum_type: pa.DataType) -> list[np.ndarray]:
    """Each column (of the argument type or ``sum_type``) as numbers in one common numpy
    domain for ``sum_type`` (NULL as 0); decimals share one domain across all columns."""
    if pa.types.is_decimal(sum_type):
        return _decimal_numbers(columns, sum_type.scale)
    dtype = np.float64 if pa.types.is_floating(sum_type) else np.int64
    out = []
    for column in columns:
        if pa.types.is_null(column.type):
            out.append(np.zeros(len(column), dtype=dtype))
            continue
        column = pc.fill_null(column.cast(pa.float64() if dtype == np.float64 else pa.int64()), 0)
        out.append(column.to_numpy(zero_copy_only=False).astype(dtype, copy=False))
    return out


def _decimal_numbers(columns: Sequence[pa.Array], scale: int) -> list[np.ndarray]:
    target = pa.decimal128(T.MAX_DECIMAL_PRECISION, scale)
    arrays = [column.cast(target) for column in columns]
    pairs = [unscaled(a) if len(a) else (np.zeros(0, dtype=np.int64), True) for a in arrays]
    bound = sum(float(np.abs(units.astype(np.float64)).sum()) for units, _ in pairs)
    if all(fits for _, fits in pairs) and bound < _INT64_SAFE:
        return [units for units, _ in pairs]
    # exact but slow: one Python int per value (beyond 18 digits only)
    with decimal.localcontext() as context:
        context.prec = 80
        return [np.array([0 if v is None else int(v.scaleb(scale)) for v in a.to_pylist()],
                         dtype=object) for a in arrays]


def to_arrow(values: np.ndarray, valid: np.ndarray, sum_type: pa.DataType) -> pa.Array:
    """Numbers of ``numbers``' domain back to an array of ``sum_type`` (NULL where not
    ``valid``)."""
    if pa.types.is_decimal(sum_type):
        scale = sum_type.scale
        if values.dtype == object:
            with decimal.localcontext() as context:
                context.prec = 80
                array = pa.array([decimal.Decimal(int(v)).scaleb(-scale) if ok else None
                                  for v, ok in zip(values.tolist(), valid.tolist())],
                                 type=sum_type)
            return array
        array = from_unscaled(values.astype(np.int64), scale)
    else:
        array = pa.array(values)
    mask = pa.array(~valid, pa.bool_())
    return pc.if_else(mask, pa.scalar(None, array.type), array).cast(sum_type)


def as_float(values: np.ndarray, sum_type: pa.DataType) -> np.ndarray:
    """Numbers of ``numbers``' domain as float64 values (for AVG)."""
    floats = values.astype(np.float64)
    if pa.types.is_decimal(sum_type):
        floats = floats / 10.0 ** sum_type.scale
    return floats
