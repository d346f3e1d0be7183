"""Watermark generation: bounded out-of-orderness, ``WATERMARK FOR ts AS ts - INTERVAL ...``.

The watermark is ``max(event time seen) - delay``: a promise that no record with an event
time at or before it will follow (records that break the promise are late). When it is
emitted is ``pipeline.auto-watermark-interval``:

* ``0`` -- after every record, in input order (Flink's per-record emission). Vectorized:
  a running maximum over the batch gives, for every record, the watermark in effect when
  it *arrives* (the one emitted after the previous record). Operators that decide
  lateness and firing per record take these ``row_watermarks`` as a column, which makes a
  batch behave exactly like the same records arriving one at a time, whatever the chunking;
* ``> 0`` -- periodically: at most once per interval of processing time (``clock`` in ms,
  injectable for tests), and every record of a batch sees the last emitted watermark.

Watermarks never go backwards; a generator emits only when its watermark advances.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from flowsql.errors import ExecutionError

#: the watermark before anything has been seen
MIN_WATERMARK = -(2**63)


def monotonic_ms() -> int:
    """Milliseconds of a clock that never steps back: for intervals (idle timeouts,
    periodic emission), not for timestamps."""
    return time.monotonic_ns() // 1_000_000


def epoch_ms() -> int:
    """The wall clock in epoch milliseconds: what ``PROCTIME()`` returns and what a
    processing-time watermark is made of (the two must read the clock the same way)."""
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class BatchWatermarks:
    """What one batch means for event time: ``row_watermarks[i]`` is the watermark when
    record ``i`` arrives; ``emit`` the watermark to send after the batch (None: none)."""

    row_watermarks: np.ndarray
    emit: int | None


class BoundedOutOfOrderness:
    """The generator behind ``WATERMARK FOR ts AS ts - INTERVAL 'delay'``."""

    def __init__(self, delay_ms: int, interval_ms: int = 0,
                 clock: Callable[[], int] = monotonic_ms) -> None:
        if delay_ms < 0 or interval_ms < 0:
            raise ExecutionError("watermark delay and pipeline.auto-watermark-interval must "
                                 f"not be negative (got {delay_ms} ms and {interval_ms} ms)")
        self.delay = delay_ms
        self.interval = interval_ms
        self._clock = clock
        self._current = MIN_WATERMARK  # max(ts) - delay over everything seen
        self._emitted = MIN_WATERMARK
        self._last_emit_time = clock()

    @property
    def emitted(self) -> int:
        return self._emitted

    @property
    def current(self) -> int:
        """``max(event time seen) - delay``, emitted or not (periodic mode lags behind)."""
        return self._current

    def resume(self, current: int, emitted: int) -> None:
        """Continue from a saved ``current`` and ``emitted`` (a restored source): records
        at or below the saved watermark stay possibly late, and nothing older is sent."""
        self._current = max(current, emitted)
        self._emitted = emitted

    def on_batch(self, timestamps: np.ndarray) -> BatchWatermarks:
        """Account a batch of event times (int64 ms, in arrival order)."""
        if not len(timestamps):
            return BatchWatermarks(np.empty(0, np.int64), None)
        candidates = np.asarray(timestamps, np.int64) - self.delay
        if self.interval == 0:
            after = np.maximum.accumulate(np.maximum(candidates, self._emitted))
            row_watermarks = np.concatenate(([self._emitted], after[:-1])).astype(np.int64)
            self._current = max(self._current, int(after[-1]))
            return BatchWatermarks(row_watermarks, self._emit())
        row_watermarks = np.full(len(candidates), self._emitted, np.int64)
        self._current = max(self._current, int(candidates.max()))
        return BatchWatermarks(row_watermarks, self.on_periodic())

    def on_periodic(self) -> int | None:
        """Periodic mode: the watermark to emit if an interval has passed since the last."""
        now = self._clock()
        if now - self._last_emit_time < self.interval:
            return None
        self._last_emit_time = now
        return self._emit()

    def _emit(self) -> int | None:
        if self._current <= self._emitted:
            return None
        self._emitted = self._current
        return self._emitted
