"""Watermarks per split, combined (Flink's per-partition watermarks of the Kafka source).

Every split (a Kafka partition) keeps ``max(event time) - delay`` of its own records; the
source's watermark is the minimum over its splits. So a partition that is read ahead of
another does not make the other's records late: a record is late only when it is behind
its own partition's watermark *and* every other partition's. A split that has produced no
record yet holds the watermark back, as in Flink (nothing is known about its times), unless
it is idle: with ``table.exec.source.idle-timeout`` > 0 a split that produced nothing for
that long is left out of the minimum until it produces again. When every split is idle, the
minimum is taken over the splits that have produced records (Flink leaves the watermark
where it was; then a burst into one partition while another stays empty could leave its
windows unfired, depending on which split's idle timeout expired first).

Emission follows ``pipeline.auto-watermark-interval``: with 0, after every batch that moves
the combined watermark; otherwise at most once per interval. Watermarks never go back.
The per-split maxima are part of the source's checkpointed state (see the source), so a
restored source judges records as the failed one would have.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from flowsql.runtime.time.watermarks import MIN_WATERMARK, monotonic_ms


class SplitWatermarks:
    """Combined watermark of splits numbered by the caller (indexes into its split list)."""

    def __init__(self, delay_ms: int, interval_ms: int, idle_timeout_ms: int | None,
                 clock: Callable[[], int] = monotonic_ms) -> None:
        self.delay_ms = delay_ms
        self.interval_ms = interval_ms
        self.idle_timeout_ms = idle_timeout_ms
        self._clock = clock
        #: per split: max event time seen (MIN_WATERMARK: none yet) and last record time
        self.max_time: list[int] = []
        self._last_active: list[int] = []
        self.emitted = MIN_WATERMARK
        self._next_emission = 0

    def add_split(self, max_time: int = MIN_WATERMARK) -> int:
        """A new split (a discovered or assigned partition); returns its index."""
        self.max_time.append(max_time)
        self._last_active.append(self._clock())
        return len(self.max_time) - 1

    def on_records(self, splits: np.ndarray, times: np.ndarray) -> None:
        """Records of a batch: ``splits[i]`` the split of record i, ``times[i]`` its event
        time in epoch ms (rows with a NULL time are left out by the caller)."""
        if not len(splits):
            return
        now = self._clock()
        maxima = np.full(len(self.max_time), MIN_WATERMARK, dtype=np.int64)
        np.maximum.at(maxima, splits, times)
        for split in np.unique(splits).tolist():
            self.max_time[split] = max(self.max_time[split], int(maxima[split]))
            self._last_active[split] = now

    def touch(self, splits: np.ndarray) -> None:
        """Splits that produced records without event times (still active)."""
        now = self._clock()
        for split in np.unique(splits).tolist():
            self._last_active[split] = now

    def current(self) -> int | None:
        """The combined watermark now (None: nothing is known yet)."""
        now = self._clock()
        active = [t for t, last in zip(self.max_time, self._last_active)
                  if self.idle_timeout_ms is None or now - last < self.idle_timeout_ms]
        if not active:
            # every split idle: the splits that produced records decide (a burst into some
            # partitions while others stay empty must not leave its windows unfired)
            active = [t for t in self.max_time if t != MIN_WATERMARK]
            if not active:
                return None
        lowest = min(active)
        return MIN_WATERMARK if lowest == MIN_WATERMARK else lowest - self.delay_ms

    def emit(self) -> int | None:
        """The watermark to send now, or None (not advanced, or not yet due)."""
        now = self._clock()
        if self.interval_ms and now < self._next_emission:
            return None
        watermark = self.current()
        if watermark is None or watermark <= self.emitted:
            return None
        self.emitted = watermark
        self._next_emission = now + self.interval_ms
        return watermark
