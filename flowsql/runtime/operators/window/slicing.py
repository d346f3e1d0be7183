"""Window slicing for fixed windows (Flink's ``SliceAssigner`` idea): where slices and
windows lie in event time.

Every fixed window kind is a union of consecutive *slices* of one width, the ``unit``:
TUMBLE's unit is its size, HOP's its slide, CUMULATE's its step (the specs check that the
unit divides the size). Slices are aligned like windows (epoch plus ``offset``) and named
by their end; window ends lie on the same grid, so

* a window ``[start, end)`` is exactly the slices whose end lies in ``(start, end]``;
* the windows that hold a slice ending at ``s`` are the ones ending at ``s``, ``s + unit``,
  ... up to ``last_window_end(s)`` (HOP: ``s + size - slide``; TUMBLE: ``s``; CUMULATE:
  the end of the slice's period).

A record therefore needs to be aggregated once, into its slice; a window's result is the
merge of its slices, computed when the window fires. All times are int64 milliseconds;
scalar results are Python ints, so ``MIN_WATERMARK`` / ``MAX_WATERMARK`` never overflow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flowsql.runtime.operators.window.window_specs import WindowSpec

#: times are clamped into +-2**62 before int64 arithmetic (real event times are far inside)
_BOUND = 2**62


@dataclass(frozen=True)
class Slicing:
    """Slice and window geometry of one fixed window spec (tumble, hop or cumulate)."""

    kind: str
    size: int
    unit: int
    offset: int

    @staticmethod
    def of(spec: WindowSpec) -> Slicing:
        unit = {"tumble": spec.size, "hop": spec.slide, "cumulate": spec.step}[spec.kind]
        return Slicing(spec.kind, spec.size, unit, spec.offset)

    def slice_ends(self, ts: np.ndarray) -> np.ndarray:
        """End of the slice holding each event time (the slice is ``[end - unit, end)``)."""
        return ts - np.mod(ts - self.offset, self.unit) + self.unit

    def last_window_ends(self, slice_ends: np.ndarray) -> np.ndarray:
        """End of the last window that holds each slice: once it fired, the slice is done."""
        if self.kind == "hop":
            return slice_ends + (self.size - self.unit)
        if self.kind == "tumble":
            return slice_ends
        return slice_ends - 1 - np.mod(slice_ends - 1 - self.offset, self.size) + self.size

    def window_start(self, end: int) -> int:
        """Start of the window ending at ``end`` (a grid point)."""
        if self.kind == "cumulate":
            return end - 1 - (end - 1 - self.offset) % self.size
        return end - self.size

    def window_ends_due(self, slice_ends: np.ndarray, after: int, through: int) -> np.ndarray:
        """Ends, ascending, of the windows that fire when the watermark moves from ``after``
        to ``through`` (``after < end - 1 <= through``) and hold at least one of the sorted
        ``slice_ends``; windows holding no slice have no rows and are skipped."""
        if not len(slice_ends):
            return np.empty(0, np.int64)
        low = self._grid_at_or_after(max(after, -_BOUND) + 2)
        high = self._grid_at_or_before(min(through, _BOUND) + 1)
        if low > high:
            return np.empty(0, np.int64)
        firsts = np.maximum(slice_ends, low)
        lasts = np.minimum(self.last_window_ends(slice_ends), high)
        # slice ends are sorted, and so are their last window ends: a running maximum of
        # the ends already listed skips every end an earlier slice contributed
        covered = np.maximum.accumulate(lasts)
        previous = np.concatenate(([low - self.unit], covered[:-1]))
        firsts = np.maximum(firsts, previous + self.unit)
        counts = np.maximum((lasts - firsts) // self.unit + 1, 0)
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        return np.repeat(firsts, counts) + offsets * self.unit

    def first_due_end(self, watermark: int) -> int:
        """The earliest window end not yet due at ``watermark`` (``end - 1 > watermark``)."""
        return self._grid_at_or_after(max(watermark, -_BOUND) + 2)

    def epochs(self, arrival: np.ndarray) -> np.ndarray:
        """How many grid points (window ends) are due at each watermark, up to a constant:
        two watermarks fire the same windows exactly when their epochs are equal."""
        return np.floor_divide(np.maximum(arrival, -_BOUND) + 1 - self.offset, self.unit)

    def _grid_at_or_after(self, time: int) -> int:
        return time + (self.offset - time) % self.unit

    def _grid_at_or_before(self, time: int) -> int:
        return time - (time - self.offset) % self.unit
