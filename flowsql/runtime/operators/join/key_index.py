"""A vectorized hash index over the build side's join keys: probe rows -> equal build rows.

The build keys are reduced to one 64-bit code per row and sorted once; a probe batch maps
its codes to the build's distinct codes (one array lookup, a short scan of a bucket, or a
binary search), expands them to row pairs with ``np.repeat`` and, where codes can collide, keeps only the pairs
whose keys are really equal. No Python runs per row, and building costs one sort of the
build side, once, however many probe batches follow (Acero's join rebuilds its hash table
on every call).

Codes:

* integer and temporal keys (one column or several) whose value ranges on the build side
  multiply to less than 2**62 are *packed*: ``sum((v_i - min_i) * stride_i)``, exact, so
  no equality check is needed; a probe value outside the build's range cannot match and
  gets code -1. When the packed codes are dense enough, a direct table maps a code to its
  distinct number (to the build row itself when build keys are unique) in one lookup;
  otherwise the sorted distinct codes are cut into buckets by their offset from the
  smallest code (about two buckets per distinct code, see :class:`_Buckets`), and a probe
  code is compared with the few codes of its bucket;
* a single integer key of a wider range is its own code (its int64 value), also exact;
* any other key uses :func:`flowsql.runtime.partitioning.hash_columns`, and candidate pairs
  are checked for equality column by column.

Rows with a NULL in any key are left out of the index and find nothing when probed: SQL
equality never holds on NULL. Both sides hand in their keys already cast to one common type
per key column.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.partitioning import hash_columns

_EMPTY = np.zeros(0, dtype=np.int64)
#: packed codes get a direct lookup table when they span at most this many slots per
#: distinct value (plus the slack), or when the caller grants the table's bytes
_DIRECT_SPAN_FACTOR = 4
_DIRECT_SPAN_SLACK = 4096
#: below this many distinct codes the index stays in cache: needles are not sorted first
_SMALL_INDEX = 1 << 16
#: buckets per distinct code of a bucket directory
_BUCKETS_PER_CODE = 2
#: a bucket directory is used only if no bucket holds more codes than this (skewed codes,
#: e.g. a few outliers far from the rest, fall back to the binary search)
_MAX_BUCKET_CODES = 16
_PACKED_LIMIT = 1 << 62

Keys = Sequence[pa.Array | pa.ChunkedArray]


def _contiguous(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(array, pa.ChunkedArray):
        return array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    return array


def _integral(t: pa.DataType) -> bool:
    """Whether a key of this type is an int64 value (integers, dates, times, timestamps)."""
    return (pa.types.is_integer(t) and t != pa.uint64()) or (
        pa.types.is_temporal(t) and not pa.types.is_interval(t) and t.bit_width in (32, 64))


def _int64(key: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An integral key's values as int64 (NULL slots hold an arbitrary value)."""
    key = _contiguous(key)
    t = key.type
    if pa.types.is_temporal(t):
        key = key.view(pa.int32() if t.bit_width == 32 else pa.int64())
    if key.type != pa.int64():
        key = pc.cast(key, pa.int64())
    if key.null_count:
        key = key.fill_null(0)
    return np.asarray(key.to_numpy(zero_copy_only=False))


def _valid(keys: Keys) -> np.ndarray | None:
    """Rows without a NULL key (None: every row)."""
    mask = None
    for key in keys:
        if key.null_count:
            valid = key.is_valid()
            mask = valid if mask is None else pc.and_(mask, valid)
    if mask is None:
        return None
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


class KeyIndex:
    """Build rows by key code; :meth:`probe` gives the pairs of equal keys."""

    def __init__(self, keys: Keys, num_rows: int, spare_bytes: int = 0) -> None:
        """``spare_bytes``: memory the caller grants for a direct table larger than
        :data:`_DIRECT_SPAN_FACTOR` slots per distinct code (see :attr:`extra_bytes`)."""
        self._keys = [_contiguous(k) for k in keys]
        valid = _valid(keys)
        rows = np.arange(num_rows, dtype=np.int64) if valid is None else np.flatnonzero(valid)
        self._packing: tuple[list[int], list[int], list[int]] | None = None
        self._exact = bool(keys) and all(_integral(k.type) for k in keys)
        if self._exact and len(rows):
            self._packing = self._plan_packing(rows)
            if self._packing is None and len(keys) > 1:
                self._exact = False
        codes = self._codes(self._keys)[rows] if keys and num_rows else _EMPTY
        order = np.argsort(codes, kind="stable")
        self._rows = rows[order]
        codes = codes[order]
        # one entry per distinct code: its first position in ``_rows`` and its row count
        first = (np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1])))
                 if len(codes) else _EMPTY)
        self._distinct = codes[first]
        self._starts = first
        self._counts = np.diff(np.append(first, len(codes)))
        self._unique = len(self._distinct) == len(codes)
        self.extra_bytes = 0
        self._direct = self._direct_table(spare_bytes)
        self._buckets = _Buckets.of(self._distinct) if self._direct is None else None

    def _plan_packing(self, rows: np.ndarray) -> tuple[list[int], list[int], list[int]] | None:
        """Per key column: build minimum, maximum and stride, if the ranges fit 62 bits."""
        lows, highs, strides = [], [], []
        stride = 1
        for key in reversed(self._keys):
            values = _int64(key)[rows]
            low, high = int(values.min()), int(values.max())
            lows.append(low)
            highs.append(high)
            strides.append(stride)
            stride *= high - low + 1
            if stride >= _PACKED_LIMIT:
                return None
        return lows[::-1], highs[::-1], strides[::-1]

    def _codes(self, keys: Keys) -> np.ndarray:
        if not self._exact:
            return hash_columns(keys)
        if self._packing is None:
            return _int64(keys[0])
        lows, highs, strides = self._packing
        code = np.zeros(len(keys[0]), dtype=np.int64)
        outside = None
        for key, low, high, stride in zip(keys, lows, highs, strides):
            values = _int64(key)
            out = (values < low) | (values > high)
            outside = out if outside is None else outside | out
            code += (values - low) * stride
        assert outside is not None
        if outside.any():
            code[outside] = -1
        return code

    def _direct_table(self, spare_bytes: int) -> np.ndarray | None:
        """For packed codes of a small range: ``table[code]`` is the code's distinct
        number (the build row when keys are unique) or -1: probing is one lookup a row.
        Bytes beyond the usual bound come out of ``spare_bytes`` (:attr:`extra_bytes`)."""
        if self._packing is None or not len(self._distinct):
            return None
        span = int(self._distinct[-1]) + 1
        big = max(len(self._distinct), int(self._rows.max()) + 1) >= 2**31
        width = 8 if big else 4
        usual = _DIRECT_SPAN_FACTOR * len(self._distinct) + _DIRECT_SPAN_SLACK
        extra = max(0, span - usual) * width
        if extra > spare_bytes:
            return None
        self.extra_bytes = extra
        table = np.full(span, -1, dtype=np.int64 if big else np.int32)
        table[self._distinct] = self._rows if self._unique else np.arange(len(self._distinct))
        return table

    @property
    def nbytes(self) -> int:
        """Bytes the index itself holds (beyond the build table)."""
        direct = 0 if self._direct is None else self._direct.nbytes
        buckets = 0 if self._buckets is None else self._buckets.nbytes
        return int(self._rows.nbytes + self._distinct.nbytes + self._starts.nbytes
                   + self._counts.nbytes + direct + buckets)

    @property
    def uses_buckets(self) -> bool:
        """Whether probes scan a bucket directory (:class:`_Buckets`)."""
        return self._buckets is not None

    @property
    def size(self) -> int:
        """Build rows in the index (those without NULL keys)."""
        return len(self._rows)

    def probe(self, keys: Keys) -> tuple[np.ndarray, np.ndarray]:
        """``(probe_rows, build_rows)``: every pair of a probe row and a build row with
        equal, non-NULL keys."""
        n = len(keys[0]) if keys else 0
        if not n or not len(self._rows):
            return _EMPTY, _EMPTY
        valid = _valid(keys)
        codes = self._codes(keys)
        slot = self._slots(codes)
        if valid is not None:
            slot = np.where(valid, slot, -1)
        probe_rows = np.flatnonzero(slot >= 0)
        if len(probe_rows) < n:
            slot = slot[probe_rows]
        if self._unique:  # one build row per code
            bid = slot if self._direct is not None else self._rows[slot]
            pid = probe_rows
        else:
            low, counts = self._starts[slot], self._counts[slot]
            total = int(counts.sum())
            pid = np.repeat(probe_rows, counts)
            starts = np.cumsum(counts) - counts
            positions = np.arange(total, dtype=np.int64) + np.repeat(low - starts, counts)
            bid = self._rows[positions]
        bid = bid.astype(np.int64, copy=False)
        if self._exact:
            return pid, bid
        return self._verified(keys, pid, bid)

    def _slots(self, codes: np.ndarray) -> np.ndarray:
        """Per probe code: its distinct number (or, with a direct table over unique keys,
        its build row); -1 where the build side lacks it."""
        if self._direct is not None:
            inside = codes.view(np.uint64) < np.uint64(len(self._direct))  # -1 is outside
            found = self._direct.take(codes, mode="clip")
            return np.where(inside, found, -1)
        if self._buckets is not None:
            return self._buckets.find(self._distinct, codes)
        if len(self._distinct) <= _SMALL_INDEX:
            found = np.minimum(np.searchsorted(self._distinct, codes), len(self._distinct) - 1)
            return np.where(self._distinct[found] == codes, found, -1)
        # binary search with the needles sorted: neighbouring needles touch neighbouring
        # memory, several times faster than random needles over a large index
        order = np.argsort(codes)
        ordered = codes[order]
        found = np.minimum(np.searchsorted(self._distinct, ordered), len(self._distinct) - 1)
        slot = np.empty(len(codes), dtype=np.int64)
        slot[order] = np.where(self._distinct[found] == ordered, found, -1)
        return slot

    def _verified(self, keys: Keys, pid: np.ndarray, bid: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
        """The candidate pairs whose keys are equal (rejects hash collisions)."""
        if not len(pid):
            return pid, bid
        pids, bids = pa.array(pid), pa.array(bid)
        same = None
        for probe_key, build_key in zip(keys, self._keys):
            equal = pc.equal(_contiguous(probe_key).take(pids), build_key.take(bids))
            same = equal if same is None else pc.and_(same, equal)
        assert same is not None
        keep = np.asarray(pc.fill_null(same, False).to_numpy(zero_copy_only=False), dtype=bool)
        if keep.all():
            return pid, bid
        return pid[keep], bid[keep]


class _Buckets:
    """A directory over sorted distinct codes: bucket ``b`` holds the codes whose unsigned
    offset from the smallest code, shifted right by ``shift``, is ``b``; they sit at
    positions ``starts[b]:starts[b + 1]`` of the sorted codes. Finding a code is a scan of
    its bucket (vectorized: one comparison per round for the probe codes still open), so
    a probe costs a few sequential-ish gathers instead of a binary search's ~20 cache misses
    over a large index. Offsets are taken modulo 2**64, so any int64 codes (hashes too)
    work: a code below the smallest wraps to an offset beyond the largest."""

    def __init__(self, low: int, span: int, shift: int, starts: np.ndarray) -> None:
        self._low = np.uint64(low % (1 << 64))
        self._span = np.uint64(span)
        self._shift = np.uint64(shift)
        self._starts = starts

    @classmethod
    def of(cls, distinct: np.ndarray) -> _Buckets | None:
        """A directory for ``distinct`` (sorted, unique), or None when the codes crowd
        into too few buckets (:data:`_MAX_BUCKET_CODES`) or there are none."""
        if not len(distinct):
            return None
        low, high = int(distinct[0]), int(distinct[-1])
        span = high - low  # below 2**64
        wanted = _BUCKETS_PER_CODE * len(distinct)
        shift = max(0, (span // wanted).bit_length())
        buckets = (span >> shift) + 1
        offsets = distinct.view(np.uint64) - np.uint64(low % (1 << 64))
        bucket = (offsets >> np.uint64(shift)).astype(np.int64)
        counts = np.bincount(bucket, minlength=buckets)
        if int(counts.max()) > _MAX_BUCKET_CODES:
            return None
        dtype = np.int32 if len(distinct) < 2**31 else np.int64
        starts = np.zeros(buckets + 1, dtype=dtype)
        np.cumsum(counts, out=starts[1:])
        return cls(low, span, shift, starts)

    @property
    def nbytes(self) -> int:
        return int(self._starts.nbytes)

    def find(self, distinct: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Per code: its position in ``distinct`` or -1."""
        offsets = codes.view(np.uint64) - self._low
        inside = offsets <= self._span
        bucket = np.where(inside, offsets >> self._shift, 0).astype(np.int64)
        start = self._starts[bucket].astype(np.int64)
        left = np.where(inside, self._starts[bucket + 1] - start, 0)
        # first round over every code (most find their code first or have an empty bucket)
        first = np.minimum(start, len(distinct) - 1)
        hit = (left > 0) & (distinct[first] == codes)
        slot = np.where(hit, start, -1)
        open_rows = np.flatnonzero(~hit & (left > 1))
        position, left, needles = start[open_rows] + 1, left[open_rows] - 1, codes[open_rows]
        while len(open_rows):
            hit = distinct[position] == needles
            slot[open_rows[hit]] = position[hit]
            more = ~hit & (left > 1)
            open_rows, position = open_rows[more], position[more] + 1
            left, needles = left[more] - 1, needles[more]
        return slot
