"""Decimal128 values as their unscaled int64 integers, and back.

Arrow's decimal kernels are slow to sort and cannot keep running sums; the unscaled
integers (value * 10^scale) are exact, order-preserving, and fast in numpy whenever they
fit 64 bits, which every decimal of precision <= 18 does.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from flowsql.planner import types as T

#: Decimals of at most this precision always fit an int64 unscaled.
INT64_DIGITS = 18


def unscaled(values: pa.Array) -> tuple[np.ndarray, bool]:
    """Unscaled integers of a decimal128 array (NULL as 0) read from its 128-bit words,
    and whether every value fit 64 bits (when not, the integers are meaningless)."""
    words = np.frombuffer(values.buffers()[1], dtype=np.int64).reshape(-1, 2)
    words = words[values.offset:values.offset + len(values)]
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    low, high = words[:, 0], words[:, 1]
    fits = bool(np.array_equal(high[valid], low[valid] >> 63))
    return np.where(valid, low, 0), fits


def from_unscaled(units: np.ndarray, scale: int) -> pa.Array:
    """int64 unscaled values -> decimal128(38, scale), built from the 128-bit layout."""
    pairs = np.empty((len(units), 2), dtype=np.int64)
    pairs[:, 0] = units
    pairs[:, 1] = units >> 63
    dtype = pa.decimal128(T.MAX_DECIMAL_PRECISION, scale)
    return pa.Array.from_buffers(dtype, len(units), [None, pa.py_buffer(pairs.tobytes())])
