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
#: decimal digits that always fit a signed 64-bit word
_INT64_DIGITS = 18


@dataclass(frozen=True, slots=True)
class _Units:
    """An operand as unscaled integers: ``values`` (a contiguous int64 array with 0 for NULL,
    or one Python int for a scalar), its ``scale``, ``type_bound`` (the largest magnitude its
    type allows) and the validity mask (None when nothing is NULL)."""

    values: np.ndarray | int
    scale: int
    type_bound: int
    valid: np.ndarray | None

    def bound(self) -> int:
        """The largest magnitude of the values themselves (one pass over an array)."""
        values = self.values
        if isinstance(values, int):
            return abs(values)
        return max(int(values.max()), -int(values.min())) if len(values) else 0


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
        return _Units(values, 0, 2 ** dtype.bit_width, valid)
    if not pa.types.is_decimal128(dtype):
        return None
    words = np.frombuffer(datum.buffers()[1], dtype=np.int64,
                          count=2 * (datum.offset + len(datum)))[2 * datum.offset:]
    # numpy is several times faster on contiguous arrays than on every other word
    values = words[0::2].copy()
    if valid is not None:
        values[~valid] = 0
    if dtype.precision > _INT64_DIGITS:
        high = words[1::2]
        if valid is not None:
            high = np.where(valid, high, 0)
        if not np.array_equal(high, values >> 63):
            return None
    # below 10^18 in magnitude, a value of at most 18 digits fits the low word (and Arrow
    # keeps every value within its type's precision)
    return _Units(values, dtype.scale, 10 ** dtype.precision - 1, valid)


def _fits(op: str, left: int, right: int, up_left: int, up_right: int) -> bool:
    """Whether operands of these magnitudes keep ``op``'s result below ``_LIMIT``."""
    if op == "multiply":
        return left * right < _LIMIT
    return left * up_left + right * up_right < _LIMIT


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
        if left.scale + right.scale != result.scale:
            return None
        up_left = up_right = 1
    else:
        if result.scale < max(left.scale, right.scale):
            return None
        up_left, up_right = 10 ** (result.scale - left.scale), 10 ** (result.scale - right.scale)
    # the types' bounds usually prove it without a look at the values
    if not _fits(op, left.type_bound, right.type_bound, up_left, up_right) and not _fits(
            op, left.bound(), right.bound(), up_left, up_right):
        return None
    length = len(a) if isinstance(a, pa.Array) else len(b)
    # the result's words are written in place: low words first, then their sign extension
    words = np.empty((length, 2), dtype=np.int64)
    low = words[:, 0]
    if op == "multiply":
        np.multiply(left.values, right.values, out=low)
    else:
        kernel = np.add if op == "add" else np.subtract
        kernel(_scaled(left.values, up_left), _scaled(right.values, up_right), out=low)
    np.right_shift(low, 63, out=words[:, 1])
    valid = left.valid if right.valid is None else (
        right.valid if left.valid is None else left.valid & right.valid)
    bitmap = None if valid is None else pa.array(valid, pa.bool_()).buffers()[1]
    return pa.Array.from_buffers(result, length, [bitmap, pa.py_buffer(words)])


def _scaled(values: np.ndarray | int, factor: int) -> np.ndarray | int:
    if factor == 1:
        return values
    if isinstance(values, int):
        return values * factor
    return np.multiply(values, factor, dtype=np.int64)
