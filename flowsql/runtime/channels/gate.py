"""An input gate: one thread reads the elements of all input channels of a subtask.

``next`` returns ``(channel index, element)`` from any channel that has one, serving the
channels round-robin so a busy input cannot starve a quiet one. A channel can be *blocked*:
the gate leaves its elements queued (its sender soon runs out of credits and stops) while
the other channels keep flowing. Barrier alignment is built on exactly this — block each
channel as its barrier arrives, unblock all once every channel delivered it — and the same
mechanism serves an operator that wants to read one input to its end before another.

A channel is finished once the gate handed out its ``EndOfInput``; the gate is finished
when every channel is. Waiting for an element when every unfinished channel is blocked can
never end, so it raises instead of hanging.

Wake-ups cannot be lost: channels call the listener after queueing, the listener takes the
gate's lock, and the gate only releases that lock by waiting after it found nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from flowsql.errors import ExecutionError
from flowsql.runtime.channels.base import Element, InputChannel
from flowsql.runtime.events import EndOfInput


class InputGate:
    """Reads ``channels`` (numbered by their position) from one consuming thread."""

    def __init__(self, channels: Sequence[InputChannel]) -> None:
        self.channels = list(channels)
        self._blocked = [False] * len(self.channels)
        self._finished = [False] * len(self.channels)
        self._next = 0
        self._cond = threading.Condition()
        for channel in self.channels:
            channel.set_listener(self._wake)

    @property
    def finished(self) -> bool:
        return all(self._finished)

    def is_finished(self, index: int) -> bool:
        return self._finished[index]

    def has_readable(self) -> bool:
        """Whether some channel is neither blocked nor finished."""
        with self._cond:
            return not all(b or f for b, f in zip(self._blocked, self._finished))

    def block(self, index: int) -> None:
        with self._cond:
            self._blocked[index] = True

    def unblock(self, index: int) -> None:
        with self._cond:
            self._blocked[index] = False
            self._cond.notify_all()

    def next(self, timeout: float | None = None) -> tuple[int, Element] | None:
        """The next element, or None if none arrived within ``timeout`` seconds (or the gate
        is finished). Raises ChannelError when a channel broke."""
        with self._cond:
            while not self.finished:
                ready = self._poll_once()
                if ready is not None:
                    return ready
                if all(b or f for b, f in zip(self._blocked, self._finished)):
                    raise ExecutionError("every unfinished input of the gate is blocked: "
                                         "waiting would never end")
                if not self._cond.wait(timeout):
                    return None
            return None

    def _poll_once(self) -> tuple[int, Element] | None:
        count = len(self.channels)
        for step in range(count):
            index = (self._next + step) % count
            if self._blocked[index] or self._finished[index]:
                continue
            element = self.channels[index].poll()
            if element is not None:
                self._next = (index + 1) % count
                if isinstance(element, EndOfInput):
                    self._finished[index] = True
                return index, element
        return None

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()
