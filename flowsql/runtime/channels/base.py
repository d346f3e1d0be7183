"""What every channel end promises, whatever carries the bytes.

A channel connects one producing subtask to one consuming subtask and is FIFO over
*elements*: record batches and control events, interleaved in the order they were sent.
That order is what watermarks, barriers and end-of-input mean, so no channel may reorder,
drop or duplicate an element.

Flow control is credit-based: the consumer side holds at most ``capacity`` elements, and a
sender may only send while it holds a credit (a free slot at the consumer). A slow consumer
therefore stalls ``send``, which stalls the producing task, which stalls *its* inputs: memory
stays bounded by ``capacity`` buffers per channel all the way up the pipeline.

A channel breaks when its peer vanishes or the job is cancelled; every blocked or later call
then raises ``ChannelError`` instead of waiting forever.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.runtime.events import ControlEvent

#: what travels on a channel
Element: TypeAlias = "pa.RecordBatch | ControlEvent"


class ChannelError(ExecutionError):
    """A channel broke: the peer disconnected before end of input, or the job was cancelled."""


class OutputChannel(Protocol):
    """The sending end; ``send`` blocks while the receiver has granted no credit."""

    name: str

    def send(self, element: Element) -> None: ...

    def close(self) -> None:
        """Release the channel after the last element (normally ``EndOfInput``) was sent."""

    def abort(self, reason: str) -> None:
        """Break the channel: blocked and later calls on either end raise ChannelError."""


class InputChannel(Protocol):
    """The receiving end, read without blocking so one thread can serve many channels."""

    name: str

    def poll(self) -> Element | None:
        """The next element, or None if none has arrived yet; raises ChannelError if broken."""

    def set_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (from any thread) whenever an element arrives or the channel
        breaks; an input gate uses it to sleep until one of its channels has work."""

    def abort(self, reason: str) -> None:
        """Break the channel (see OutputChannel.abort)."""
