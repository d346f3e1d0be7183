"""The per-batch layout of a changelog aggregate and the scans that run over it.

A batch of ``N`` records touching ``G`` groups is laid out in ``M = G + N`` *positions*:
group ``g`` owns the contiguous segment ``[starts[g], starts[g] + sizes[g])``, whose first
position (the *virtual row*) stands for the group's state before the batch and whose
other positions are the group's records in arrival order. Every aggregate becomes a
*contribution* per position (the stored accumulator at the virtual row, the record's signed
effect elsewhere); a scan within segments then gives, at every position, the group's
accumulator right after that record -- and at the position before it, the value before.
That is exactly the per-record processing order of Flink's GroupAggFunction, computed for
the whole batch at once.

Every function here is vectorized numpy; the only Python loops run over bit levels
(``interval_max``) or over size classes of segments (``segmented_cumsum`` of floats), i.e.
``O(log M)`` iterations, never over rows or groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.kernels.grouping import groupable


def row_ids(columns: Sequence[pa.Array | pa.ChunkedArray], num_rows: int) -> np.ndarray:
    """Dense int64 ids in ``[0, k)``, equal exactly for rows with equal values in every
    column; NULL equals NULL (SQL GROUP BY). Without columns every row has id 0."""
    if not columns or num_rows == 0:
        return np.zeros(num_rows, dtype=np.int64)
    combined = np.zeros(num_rows, dtype=np.int64)
    radix = 1
    for column in columns:
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        column = groupable(column)
        if pa.types.is_string_view(column.type):
            column = column.cast(pa.large_string())
        encoded = pc.dictionary_encode(column, null_encoding="encode")
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        width = max(len(encoded.dictionary), 1)
        if radix * width >= 2 ** 62:
            # renumber what we have so far densely before it could overflow
            _, combined = np.unique(combined, return_inverse=True)
            combined = combined.reshape(-1).astype(np.int64)
            radix = int(combined.max()) + 1
        combined = combined * width + codes
        radix *= width
    _, ids = np.unique(combined, return_inverse=True)
    return ids.reshape(-1).astype(np.int64)


def first_occurrences(ids: np.ndarray, count: int) -> np.ndarray:
    """Index of the first row of every id in ``[0, count)`` (ids from ``row_ids``)."""
    first = np.full(count, len(ids), dtype=np.int64)
    np.minimum.at(first, ids, np.arange(len(ids), dtype=np.int64))
    return first


@dataclass(frozen=True)
class Layout:
    """Where every group's segment and every record sit (see the module docstring)."""

    starts: np.ndarray      # (G,) position of each group's virtual row
    sizes: np.ndarray       # (G,) positions of each segment, the virtual row included
    positions: np.ndarray   # (N,) position of each record
    segment: np.ndarray     # (M,) group of every position
    total: int              # M

    @property
    def lasts(self) -> np.ndarray:
        """Last position of every segment: the group's state after the batch."""
        return self.starts + self.sizes - 1

    @property
    def ends(self) -> np.ndarray:
        return self.starts + self.sizes

    def scatter(self, virtual: np.ndarray, records: np.ndarray) -> np.ndarray:
        """One value per position: ``virtual[g]`` at virtual rows, ``records[j]`` at records."""
        out = np.empty(self.total, dtype=np.result_type(virtual, records))
        out[self.starts] = virtual
        out[self.positions] = records
        return out


def layout(gid: np.ndarray, groups: int) -> Layout:
    """The layout of records with group ids ``gid`` (in arrival order) over ``groups``."""
    counts = np.bincount(gid, minlength=groups).astype(np.int64)
    sizes = counts + 1
    starts = np.cumsum(sizes) - sizes
    order = np.argsort(gid, kind="stable")
    sorted_gid = gid[order]
    first_in_sorted = np.cumsum(counts) - counts
    within = np.arange(len(gid), dtype=np.int64) - first_in_sorted[sorted_gid]
    positions = np.empty(len(gid), dtype=np.int64)
    positions[order] = starts[sorted_gid] + 1 + within
    segment = np.repeat(np.arange(groups, dtype=np.int64), sizes)
    return Layout(starts, sizes, positions, segment, int(sizes.sum()))


def segmented_cumsum(values: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Running sums restarting at every segment ``[starts[g], starts[g] + sizes[g])``
    (segments tile the array in order).

    Integers (int64 wraps like Java's long; object arrays hold exact Python ints) subtract
    each segment's base from one global cumsum, which is exact. Floats must be summed
    left to right within their segment, as a per-record fold would, so segments are padded
    into one matrix per size class (sizes within a factor of two: at most twice the work)
    and summed along rows.
    """
    if values.dtype.kind != "f":
        total = np.cumsum(values)
        base = total[starts] - values[starts]
        return total - np.repeat(base, sizes)
    out = np.empty_like(values)
    classes = np.zeros(len(sizes), dtype=np.int64)
    positive = sizes > 0
    classes[positive] = np.floor(np.log2(sizes[positive])).astype(np.int64)
    for size_class in np.unique(classes[positive]):
        chosen = np.flatnonzero(positive & (classes == size_class))
        lengths = sizes[chosen]
        width = int(lengths.max())
        rows = np.repeat(np.arange(len(chosen)), lengths)
        offsets = np.cumsum(lengths) - lengths
        cols = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(offsets, lengths)
        source = np.repeat(starts[chosen], lengths) + cols
        matrix = np.zeros((len(chosen), width), dtype=values.dtype)
        matrix[rows, cols] = values[source]
        out[source] = np.cumsum(matrix, axis=1)[rows, cols]
    return out


def running_best(weights: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Running maximum of non-negative int64 ``weights`` restarting at every segment
    (``segment`` is non-decreasing): one ``maximum.accumulate`` over weights offset by
    segment, so a segment never sees an earlier one's values."""
    if not len(weights):
        return weights
    stride = np.int64(weights.max()) + 1
    shifted = segment * stride + weights
    return np.maximum.accumulate(shifted) - segment * stride


def interval_max(lo: np.ndarray, hi: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """For every point in ``[0, size)`` the largest weight of the intervals ``[lo, hi)``
    covering it (0 where none does).

    A bottom-up segment tree: each interval is decomposed into its canonical nodes, level
    by level for all intervals at once (``maximum.at``), and each point takes the maximum
    over its ancestors."""
    best = np.zeros(size, dtype=np.int64)
    if size == 0 or not len(lo):
        return best
    leaves = 1 << max(int(size - 1).bit_length(), 1)
    tree = np.zeros(2 * leaves, dtype=np.int64)
    left, right = lo.astype(np.int64) + leaves, hi.astype(np.int64) + leaves
    active = left < right
    while active.any():
        odd_left = active & (left & 1 == 1)
        np.maximum.at(tree, left[odd_left], weights[odd_left])
        left = left + odd_left
        odd_right = active & (right & 1 == 1)
        right = right - odd_right
        np.maximum.at(tree, right[odd_right], weights[odd_right])
        left >>= 1
        right >>= 1
        active = left < right
    node = np.arange(size, dtype=np.int64) + leaves
    while True:
        best = np.maximum(best, tree[node])
        if node[0] <= 1:
            return best
        node >>= 1


@dataclass(frozen=True)
class ValueEvents:
    """Reference counts of (group, value) pairs across a batch.

    Events are the stored counts (at their group's virtual row) and the records with a
    non-NULL value, sorted by (pair, position). ``before``/``after`` are the pair's count
    around each event, ``next_position`` where the pair next changes (or its segment ends).
    """

    order: np.ndarray          # event index (in input order) of each sorted event
    pair: np.ndarray           # pair id per sorted event
    position: np.ndarray
    before: np.ndarray
    after: np.ndarray
    next_position: np.ndarray
    last: np.ndarray           # sorted indices of each pair's last event


def value_events(pair: np.ndarray, position: np.ndarray, delta: np.ndarray,
                 segment_end: np.ndarray) -> ValueEvents:
    """``pair`` ids (dense), ``position`` and signed ``delta`` per event; ``segment_end``
    per event (the end of its group's segment)."""
    n = len(pair)
    span = int(position.max()) + 1 if n else 1
    if n and int(pair.max()) < (2 ** 62) // span:
        # one sort of a combined key is much faster than a two-key lexsort
        order = np.argsort(pair.astype(np.int64) * span + position)
    else:
        order = np.lexsort((position, pair))
    pair_s, position_s, delta_s = pair[order], position[order], delta[order]
    new_run = np.r_[True, pair_s[1:] != pair_s[:-1]] if n else np.zeros(0, dtype=bool)
    starts = np.flatnonzero(new_run)
    sizes = np.diff(np.r_[starts, n])
    after = segmented_cumsum(delta_s.astype(np.int64), starts, sizes)
    last_in_run = np.r_[new_run[1:], True] if n else np.zeros(0, dtype=bool)
    next_position = np.where(last_in_run, segment_end[order],
                             np.r_[position_s[1:], 0] if n else position_s)
    return ValueEvents(order, pair_s, position_s, after - delta_s, after, next_position,
                       np.flatnonzero(last_in_run))
