"""Decimal ``+ - *`` on 64-bit unscaled integers: the fast path of exact decimal arithmetic.

Arrow's decimal128 kernels work value by value on 128-bit words, and an operation whose
pyarrow result precision passes 38 digits must even go through decimal256 and back, which
made decimal arithmetic the largest cost of decimal-heavy queries (TPC-H Q1's
``l_extendedprice * (1 - l_discount) * (1 + l_tax)``). Most decimals fit 64 bits unscaled
(value * 10^scale), and when the operands' largest magnitudes bound the result below 2^62
the exact result is one numpy int64 operation: ``a * b`` multiplies the unscaled integers
(the result's scale is the sum of the scales, as the planner types it); ``a +- b`` first
brings both to the result's scale. The result is built directly in the planner's result
type: its precision holds every value the operand types allow, so no value can exceed it.

:func:`int64_decimal_op` returns None whenever a precondition fails (a value beyond 64
bits, a bound too large, a result scale the planner reduced, a NULL scalar, two scalars),
and the caller takes the Arrow path, which is exact in every case.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.expressions.registry import Datum

#: results stay below this magnitude, so no int64 operation can overflow
_LIMIT = 2 ** 62


@dataclass(frozen=True, slots=True)
class _Units:
    """An operand as unscaled integers: ``values`` (an int64 array with 0 for NULL, or one
    Python int for a scalar), its ``scale``, the largest magnitude ``bound`` and the
    validity mask (None when nothing is NULL)."""

    values: np.ndarray | int
    scale: int
    bound: int
    valid: np.ndarray | None


def _units(datum: Datum) -> _Units | None:
    dtype = datum.type
    if isinstance(datum, pa.Scalar):
        if not datum.is_valid:
            return None
        if pa.types.is_integer(dtype):
            value = int(datum.as_py())
            return _Units(value, 0, abs(value), None)
        if pa.types.is_decimal128(dtype):
            value = int(datum.as_py().scaleb(dtype.scale))
            return _Units(value, dtype.scale, abs(value), None)
        return None
    if not isinstance(datum, pa.Array):
        return None
    valid = datum.is_valid().to_numpy(zero_copy_only=False) if datum.null_count else None
    if pa.types.is_integer(dtype):
        if pa.types.is_uint64(dtype):
            return None
        values = pc.fill_null(datum, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        scale = 0
    elif pa.types.is_decimal128(dtype):
        words = np.frombuffer(datum.buffers()[1], dtype=np.int64).reshape(-1, 2)
        words = words[datum.offset:datum.offset + len(datum)]
        values, high = words[:, 0], words[:, 1]
        if valid is not None:
            values, high = np.where(valid, values, 0), np.where(valid, high, 0)
        if not np.array_equal(high, values >> 63):
            return None
        scale = dtype.scale
    else:
        return None
    bound = max(int(values.max()), -int(values.min())) if len(values) else 0
    return _Units(values, scale, bound, valid)


def int64_decimal_op(op: str, a: Datum, b: Datum, result: pa.DataType) -> pa.Array | None:
    """``a op b`` (``op`` one of add, subtract, multiply) as an array of ``result`` (a
    decimal type), or None when the int64 path cannot prove the result exact."""
    if not pa.types.is_decimal128(result):
        return None
    if isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar):
        return None
    left, right = _units(a), _units(b)
    if left is None or right is None:
        return None
    if op == "multiply":
        if left.scale + right.scale != result.scale or left.bound * right.bound >= _LIMIT:
            return None
        values = np.multiply(left.values, right.values, dtype=np.int64)
    else:
        if result.scale < max(left.scale, right.scale):
            return None
        up_left, up_right = 10 ** (result.scale - left.scale), 10 ** (result.scale - right.scale)
        if left.bound * up_left + right.bound * up_right >= _LIMIT:
            return None
        kernel = np.add if op == "add" else np.subtract
        values = kernel(np.multiply(left.values, up_left, dtype=np.int64),
                        np.multiply(right.values, up_right, dtype=np.int64), dtype=np.int64)
    words = np.empty((len(values), 2), dtype=np.int64)
    words[:, 0] = values
    words[:, 1] = values >> 63
    valid = left.valid if right.valid is None else (
        right.valid if left.valid is None else left.valid & right.valid)
    bitmap = None if valid is None else pa.array(valid, pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(result, len(values), [bitmap, pa.py_buffer(words)])
