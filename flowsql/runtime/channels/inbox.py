"""The bounded FIFO at the receiving end of a channel, with its occupancy statistics.

Both channel kinds keep received elements here: a local channel's sender puts into it
directly (blocking while it is full, which *is* its credit), a remote channel's socket
reader puts into it after the sender spent a credit (so it never finds it full unless the
peer broke the protocol). ``max_queued`` and ``max_queued_bytes`` record the high-water
marks, which is how tests prove that back-pressure bounds memory.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

import pyarrow as pa

from flowsql.runtime.channels.base import ChannelError, Element


def element_bytes(element: Element) -> int:
    return element.nbytes if isinstance(element, pa.RecordBatch) else 0


class Inbox:
    """Holds at most ``capacity`` elements; thread-safe."""

    def __init__(self, name: str, capacity: int) -> None:
        if capacity < 1:
            raise ChannelError(f"channel {name} needs a capacity of at least one buffer")
        self.name = name
        self.capacity = capacity
        self.max_queued = 0
        self.max_queued_bytes = 0
        self.received = 0
        self._queue: deque[Element] = deque()
        self._bytes = 0
        self._cond = threading.Condition()
        self._broken: str | None = None
        self._listener: Callable[[], None] = _nothing

    def put(self, element: Element, block: bool) -> None:
        """Append; if full, wait for room (``block``) or raise (a credit was overspent)."""
        with self._cond:
            while len(self._queue) >= self.capacity and self._broken is None:
                if not block:
                    raise ChannelError(f"channel {self.name}: sender exceeded its credit")
                self._cond.wait()
            self._raise_if_broken()
            self._queue.append(element)
            self._bytes += element_bytes(element)
            self.received += 1
            self.max_queued = max(self.max_queued, len(self._queue))
            self.max_queued_bytes = max(self.max_queued_bytes, self._bytes)
        self._listener()

    def poll(self) -> Element | None:
        with self._cond:
            if self._queue:
                element = self._queue.popleft()
                self._bytes -= element_bytes(element)
                self._cond.notify_all()
                return element
            self._raise_if_broken()
            return None

    def fail(self, reason: str) -> None:
        """Wake every waiter; elements already queued stay readable, then poll raises."""
        with self._cond:
            if self._broken is None:
                self._broken = reason
            self._cond.notify_all()
        self._listener()

    def set_listener(self, listener: Callable[[], None]) -> None:
        self._listener = listener

    def __len__(self) -> int:
        return len(self._queue)

    def _raise_if_broken(self) -> None:
        if self._broken is not None:
            raise ChannelError(f"channel {self.name} broke: {self._broken}")


def _nothing() -> None:
    return None
