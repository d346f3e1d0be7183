"""Window function values over sorted rows, vectorized per function (never per row).

Every function here receives the rows already sorted by (partition, order) together with
their :class:`Layout`, and returns one value per sorted row. Frame aggregates reduce a
half-open range ``[start, end)`` per row: sums and counts as differences of prefix sums,
min / max as a segmented running extreme when the frame starts (or ends) at the partition
edge and through a sparse table (O(1) range-minimum queries) otherwise. Min / max work on
dense ranks of the values, so they cover every orderable type.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Frame
from flowsql.runtime.kernels.decimals import from_unscaled, unscaled
from flowsql.runtime.operators.over.window_frames import Layout


def _at(values: pa.Array, positions: np.ndarray, valid: np.ndarray) -> pa.Array:
    """``values[positions]``, NULL where not ``valid``."""
    safe = np.where(valid, positions, 0) if len(values) else np.zeros(len(positions), np.int64)
    taken = values.take(pa.array(safe.astype(np.int64))) if len(values) else \
        pa.nulls(len(positions), values.type)
    return pc.if_else(pa.array(valid), taken, pa.scalar(None, values.type))


# -- ranking ------------------------------------------------------------------------------

def row_number(layout: Layout) -> np.ndarray:
    return layout.index - layout.part_start + 1


def rank(layout: Layout) -> np.ndarray:
    return layout.peer_start - layout.part_start + 1


def dense_rank(layout: Layout) -> np.ndarray:
    return layout.peer - layout.peer[layout.part_start] + 1


def percent_rank(layout: Layout) -> np.ndarray:
    size = layout.part_end - layout.part_start
    return np.where(size > 1, (rank(layout) - 1) / np.maximum(size - 1, 1), 0.0)


def cume_dist(layout: Layout) -> np.ndarray:
    return (layout.peer_end - layout.part_start) / (layout.part_end - layout.part_start)


def ntile(layout: Layout, buckets: np.ndarray) -> np.ndarray:
    """DuckDB's bucketing: the first ``size % n`` buckets hold one row more."""
    if (buckets <= 0).any():
        raise ExecutionError("argument of ntile must be greater than zero")
    size = layout.part_end - layout.part_start
    n = np.minimum(buckets, size)
    small = size // n
    large = size - n * small
    boundary = large * (small + 1)
    pos = layout.index - layout.part_start
    return np.where(pos < boundary, 1 + pos // (small + 1),
                    1 + large + (pos - boundary) // np.maximum(small, 1))


# -- offsets ------------------------------------------------------------------------------

def shifted(layout: Layout, values: pa.Array, offsets: np.ndarray,
            default: pa.Array) -> pa.Array:
    """``values`` ``offsets`` rows later in the partition (negative: earlier), else
    ``default`` (lag uses negated offsets, lead the offsets as given)."""
    target = layout.index + offsets
    valid = (target >= layout.part_start) & (target < layout.part_end)
    moved = _at(values, target, valid)
    return pc.if_else(pa.array(valid), moved, default.cast(values.type))


def nth_in_frame(values: pa.Array, start: np.ndarray, end: np.ndarray,
                 nth: np.ndarray | None, from_end: bool = False) -> pa.Array:
    """first_value (nth = 1), nth_value, last_value (``from_end``) over frames."""
    if from_end:
        return _at(values, end - 1, end > start)
    assert nth is not None
    position = start + nth - 1
    return _at(values, position, (nth >= 1) & (position < end))


# -- frame aggregates ---------------------------------------------------------------------

def _prefix(values: np.ndarray) -> np.ndarray:
    out = np.zeros(len(values) + 1, dtype=values.dtype)
    np.cumsum(values, out=out[1:])
    return out


def frame_count(values: pa.Array | None, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """COUNT(x) (``values``) or COUNT(*) (None) over each frame."""
    if values is None:
        return end - start
    valid = _prefix(values.is_valid().to_numpy(zero_copy_only=False).astype(np.int64))
    return valid[end] - valid[start]


def frame_sum(values: pa.Array, start: np.ndarray, end: np.ndarray,
              as_float: bool = False) -> pa.Array:
    """SUM over each frame in the type's exact domain (int64 for integers, unscaled int64
    for decimals); NULL for frames without a non-NULL value. ``as_float`` gives the
    float64 sum (for AVG)."""
    counts = frame_count(values, start, end)
    empty = pa.array(counts == 0)
    dtype = values.type
    if T.is_decimal(dtype):
        units, fits = unscaled(values)
        if not fits:
            raise ExecutionError("window SUM over decimals beyond 18 digits is not supported")
        prefix = _prefix(units)
        sums = prefix[end] - prefix[start]
        result = pa.array(sums / 10.0**dtype.scale) if as_float \
            else from_unscaled(sums, dtype.scale)
    elif T.is_integer(dtype) and not as_float:
        prefix = _prefix(np.asarray(pc.fill_null(values.cast(pa.int64()), 0).to_numpy()))
        result = pa.array(prefix[end] - prefix[start])
    else:
        floats = np.asarray(pc.fill_null(values.cast(pa.float64()), 0.0).to_numpy(
            zero_copy_only=False))
        prefix = _prefix(floats)
        result = pa.array(prefix[end] - prefix[start])
    return pc.if_else(empty, pa.scalar(None, result.type), result)


def frame_avg(values: pa.Array, start: np.ndarray, end: np.ndarray) -> pa.Array:
    total = frame_sum(values, start, end, as_float=True)
    counts = frame_count(values, start, end)
    return pc.divide(total, pa.array(np.maximum(counts, 1).astype(np.float64)))


def _running_min(keys: np.ndarray, partition: np.ndarray) -> np.ndarray:
    """Running minimum of non-negative ``keys`` restarting at each partition (partition
    numbers ascending): shifting partition ``p`` down by ``p * big`` makes every later
    partition smaller than all earlier ones, so one global accumulate never leaks across
    a partition boundary."""
    big = int(keys.max(initial=0)) + 2
    offset = partition.astype(np.int64) * big
    return np.minimum.accumulate(keys - offset) + offset


def _sparse_min(keys: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Minimum of ``keys[start:end]`` per row (ranges non-empty) via a sparse table."""
    length = end - start
    levels = int(np.log2(length.max())) + 1 if len(length) else 1
    table = [keys]
    for level in range(1, levels):
        prev, width = table[-1], 1 << (level - 1)
        table.append(np.minimum(prev[:-width], prev[width:]))
    level_of = np.floor(np.log2(length)).astype(np.int64)
    result = np.empty(len(start), dtype=keys.dtype)
    for level in np.unique(level_of):
        rows = level_of == level
        result[rows] = np.minimum(table[level][start[rows]],
                                  table[level][end[rows] - (1 << level)])
    return result


def frame_extreme(values: pa.Array, start: np.ndarray, end: np.ndarray, frame: Frame,
                  layout: Layout, is_max: bool) -> pa.Array:
    """MIN / MAX over each frame; NULL where the frame has no non-NULL value.

    Values become dense ranks 0..m-1 (max uses reversed ranks, so both are minimum
    queries); NULLs get the key m, larger than every value."""
    n = len(values)
    if pa.types.is_null(values.type) or not n:
        return pa.nulls(len(start), values.type)
    nulls = values.is_null().to_numpy(zero_copy_only=False)
    codes = np.asarray(pc.rank(values, sort_keys="ascending", tiebreaker="dense")
                       .to_numpy(zero_copy_only=False), dtype=np.int64) - 1
    m = int(codes[~nulls].max(initial=-1)) + 1
    keys = np.where(nulls, m, (m - 1 - codes) if is_max else codes)
    nonempty = end > start
    if frame.start.kind == "unbounded_preceding":
        best = _running_min(keys, layout.partition)[np.maximum(end - 1, 0)]
    elif frame.end.kind == "unbounded_following":
        flipped = (layout.partition[-1] - layout.partition)[::-1]
        best = _running_min(keys[::-1], flipped)[::-1][np.minimum(start, n - 1)]
    else:
        best = _sparse_min(keys, start, np.where(nonempty, end, start + 1))
    found = nonempty & (best < m)
    code = np.clip((m - 1 - best) if is_max else best, 0, max(m - 1, 0))
    position_of = np.zeros(max(m, 1), dtype=np.int64)
    position_of[codes[~nulls]] = np.flatnonzero(~nulls)
    return _at(values, position_of[code], found)
