"""Everything ANALYZE measures about one column, accumulated batch by batch.

Memory is bounded whatever the table's size: counts and extremes are scalars, the distinct
count is a HyperLogLog sketch (16 KiB), the histogram a bounded uniform sample. Exact:
the null count, the minimum and the maximum (also of strings, for display; only ordered
types keep them in :class:`ColumnStatistics`, in the numeric form) and the average width.
Sketched: the distinct count. Sampled: the histogram's inner bounds (see ``equi_depth``).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.statistics import ColumnStatistics, is_ordered_type, statistic_number
from flowsql.runtime.partitioning import hash_array
from flowsql.runtime.statistics.equi_depth import UniformSample, equi_depth_bounds
from flowsql.runtime.statistics.hyperloglog import HyperLogLog
from flowsql.runtime.statistics.numeric_form import numeric_values

__all__ = ["ColumnProfile"]


class ColumnProfile:
    """Statistics of one column of type ``dtype``: ``add`` each batch's array, then read
    :meth:`statistics`. ``minimum`` / ``maximum`` are Python values (None when unknown)."""

    def __init__(self, dtype: pa.DataType, seed: int = 0) -> None:
        self.dtype = dtype
        self.rows = 0
        self.null_count = 0
        self.minimum: Any = None
        self.maximum: Any = None
        self._width_bytes = 0.0
        self._comparable = is_ordered_type(dtype) or _is_text(dtype)
        self._text_like = _is_text(dtype) or pa.types.is_binary(dtype) or \
            pa.types.is_large_binary(dtype) or pa.types.is_binary_view(dtype)
        self._sketch = HyperLogLog() if _is_sketchable(dtype) else None
        self._sample = UniformSample(seed=seed) if is_ordered_type(dtype) else None

    def add(self, array: pa.Array | pa.ChunkedArray) -> None:
        """Account for every value of ``array`` (of this profile's type)."""
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        self.rows += len(array)
        self.null_count += array.null_count
        values = pc.drop_null(array) if array.null_count else array
        if len(values) == 0:
            return
        self._width_bytes += _width_bytes(values)
        if self._comparable:
            extremes = pc.min_max(values)
            self._extend(extremes["min"].as_py(), extremes["max"].as_py())
        if self._sketch is not None:
            # hashing variable-length values costs per byte; Arrow's hash table finds a
            # batch's distinct values for much less, and the sketch needs nothing else
            self._sketch.update(hash_array(pc.unique(values) if self._text_like else values))
        if self._sample is not None:
            self._sample.add(numeric_values(values))

    def _extend(self, low: Any, high: Any) -> None:
        if low is not None and (self.minimum is None or low < self.minimum):
            self.minimum = low
        if high is not None and (self.maximum is None or high > self.maximum):
            self.maximum = high

    @property
    def distinct_count(self) -> int | None:
        """The sketch's estimate, never above the non-null count nor below 1 when there is
        a value."""
        if self._sketch is None:
            return None
        present = self.rows - self.null_count
        if present == 0:
            return 0
        return max(1, min(present, round(self._sketch.estimate())))

    def statistics(self) -> ColumnStatistics:
        present = self.rows - self.null_count
        low = statistic_number(self.minimum, self.dtype) if is_ordered_type(self.dtype) \
            else None
        high = statistic_number(self.maximum, self.dtype) if is_ordered_type(self.dtype) \
            else None
        histogram: tuple[float, ...] = ()
        if self._sample is not None and low is not None and high is not None:
            histogram = equi_depth_bounds(self._sample.values, low, high)
        return ColumnStatistics(
            null_count=self.null_count, distinct_count=self.distinct_count,
            min_value=low, max_value=high, histogram=histogram,
            avg_width=self._width_bytes / present if present else None)


def _is_text(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
                or pa.types.is_string_view(dtype))


def _is_sketchable(dtype: pa.DataType) -> bool:
    """Types the stable hash covers: everything but nested types."""
    return not pa.types.is_nested(dtype)


def _width_bytes(values: pa.Array) -> float:
    """Total size of the (non-null) values in bytes: strings and binaries their length,
    fixed-width types their width, anything else its buffers."""
    dtype = values.type
    if _is_text(dtype) or pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype) \
            or pa.types.is_binary_view(dtype):
        total = pc.sum(pc.binary_length(values)).as_py()
        return float(total or 0)
    try:
        return len(values) * dtype.bit_width / 8
    except ValueError:
        return float(values.nbytes)
