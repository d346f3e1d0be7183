"""A channel between two subtasks of the same process: elements are handed over by
reference (no serialization), and the inbox capacity is the credit."""

from __future__ import annotations

from collections.abc import Callable

from flowsql.runtime.channels.base import Element
from flowsql.runtime.channels.inbox import Inbox


class LocalChannel:
    """Both ends in one object: the producer calls ``send``/``close``, the consumer ``poll``.

    ``send`` blocks while ``capacity`` elements are queued. Batches are shared, not copied:
    Arrow batches are immutable, so neither side can disturb the other.
    """

    def __init__(self, name: str, capacity: int) -> None:
        self.name = name
        self.inbox = Inbox(name, capacity)

    def send(self, element: Element) -> None:
        self.inbox.put(element, block=True)

    def close(self) -> None:
        return None

    def abort(self, reason: str) -> None:
        self.inbox.fail(reason)

    def poll(self) -> Element | None:
        return self.inbox.poll()

    def set_listener(self, listener: Callable[[], None]) -> None:
        self.inbox.set_listener(listener)
