"""Combining the watermarks of several inputs into one, with idle inputs left out.

An operator's event time is the minimum of its inputs' watermarks: it may only promise
what every input promised. An input that has sent nothing (records or watermarks) for
``idle_timeout_ms`` of processing time is *idle* and excluded, so one silent partition
does not stall event time (Flink's ``table.exec.source.idle-timeout``); it becomes active
again with its next record or watermark. When every input is idle, nothing will move
time on, so the combined watermark becomes the largest any input reached (Flink's
flush when its last active channel goes idle): an input that went idle ahead of the others
still lets its windows fire. The combined watermark never goes backwards, also when an input that was
behind becomes active again.
"""

from __future__ import annotations

from collections.abc import Callable

from flowsql.errors import ExecutionError
from flowsql.runtime.time.watermarks import MIN_WATERMARK, monotonic_ms


class WatermarkMerger:
    """Min-combining of ``inputs`` watermarks; methods return the new combined watermark
    when it advanced, else None."""

    def __init__(self, inputs: int, idle_timeout_ms: int | None = None,
                 clock: Callable[[], int] = monotonic_ms) -> None:
        if inputs < 1:
            raise ExecutionError("watermark merging needs at least one input")
        self._clock = clock
        self._timeout = idle_timeout_ms if idle_timeout_ms else None
        self._watermarks = [MIN_WATERMARK] * inputs
        self._last_active = [clock()] * inputs
        self._idle = [False] * inputs
        self.combined = MIN_WATERMARK

    def on_records(self, input: int) -> int | None:
        """Records arrived on ``input``: it is active (again)."""
        self._touch(input)
        return None

    def on_watermark(self, input: int, watermark: int) -> int | None:
        self._touch(input)
        self._watermarks[input] = max(self._watermarks[input], watermark)
        return self._recombine()

    def check_idle(self) -> int | None:
        """Mark inputs silent for longer than the timeout idle (call periodically)."""
        if self._timeout is None:
            return None
        now = self._clock()
        for index, last in enumerate(self._last_active):  # one entry per input, not per row
            if now - last >= self._timeout:
                self._idle[index] = True
        return self._recombine()

    def mark_idle(self, input: int) -> int | None:
        """``input`` said it is idle (an upstream subtask without input): leave it out
        until its next record or watermark."""
        self._idle[input] = True
        return self._recombine()

    def is_idle(self, input: int) -> bool:
        return self._idle[input]

    def _touch(self, input: int) -> None:
        self._last_active[input] = self._clock()
        self._idle[input] = False

    def _recombine(self) -> int | None:
        active = [w for w, idle in zip(self._watermarks, self._idle) if not idle]
        candidate = min(active) if active else max(self._watermarks)
        if candidate <= self.combined:
            return None
        self.combined = candidate
        return candidate
