"""Event times as int64 epoch milliseconds (the unit of Flink's TIMESTAMP(3) rowtime), the
time unit of every event-time operator."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError


def epoch_millis(column: pa.Array, who: str) -> np.ndarray:
    """A timestamp column (no NULLs) as int64 milliseconds since the epoch."""
    if column.null_count:
        raise ExecutionError(f"{who}: the time column has NULL values")
    if not pa.types.is_timestamp(column.type):
        raise ExecutionError(f"{who}: the time column has type {column.type}, expected a "
                             "timestamp")
    millis = pc.cast(column, pa.timestamp("ms", column.type.tz), safe=False)
    return np.asarray(pc.cast(millis, pa.int64()).to_numpy(zero_copy_only=False), np.int64)
