"""Ordered values as the floats statistics compare, a whole array at a time.

The vectorized counterpart of ``planner.statistics.statistic_number``: numbers and decimals
as themselves, dates as days since 1970-01-01, timestamps as microseconds since the epoch
as written (a zoned timestamp as its local wall-clock time), times as microseconds since
midnight, booleans as 0/1. Both must agree value for value (a test checks it), because
histogram bounds from here are compared with literals converted there.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["numeric_values"]

_MICROS_PER_UNIT = {"s": 1_000_000.0, "ms": 1_000.0, "us": 1.0, "ns": 0.001}


def numeric_values(array: pa.Array) -> np.ndarray:
    """float64 numeric form of the non-null values of ``array`` (an ordered type, see
    ``planner.statistics.is_ordered_type``), NULLs dropped."""
    values = pc.drop_null(array)
    dtype = values.type
    if pa.types.is_boolean(dtype) or pa.types.is_integer(dtype) or \
            pa.types.is_floating(dtype) or pa.types.is_decimal(dtype):
        return np.asarray(pc.cast(values, pa.float64()).to_numpy(zero_copy_only=False),
                          dtype=np.float64)
    if pa.types.is_date(dtype):
        days = pc.cast(values, pa.date32()).cast(pa.int32())
        return days.to_numpy(zero_copy_only=False).astype(np.float64)
    if pa.types.is_timestamp(dtype):
        if dtype.tz is not None:
            values = pc.local_timestamp(values)
        ticks = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        return ticks.astype(np.float64) * _MICROS_PER_UNIT[dtype.unit]
    if pa.types.is_time(dtype):
        ticks = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
        return ticks.astype(np.float64) * _MICROS_PER_UNIT[dtype.unit]
    raise TypeError(f"values of type {dtype} have no numeric form")
