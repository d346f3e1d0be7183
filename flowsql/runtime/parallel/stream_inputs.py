"""The receiving side of job edges in a streaming stage: polled sources over one input gate.

A streaming subtask is driven push-based (``StreamingRun``): every source is polled in turn
and whatever it has is pushed through the stage at once. The exchange inputs of a stage
are such sources. All of a task's channels come through one :class:`InputGate`, read by one
:class:`GateReader`: it hands each element to the queue of the job edge its channel
belongs to, so a stage with two exchange inputs (a join) reads both sides interleaved, in
the order they arrive, and one side never waits behind the other.

Checkpoint barriers and channel ends are handed out in order with the batches as
``ChannelEvent``s naming the gate channel, for the task's barrier alignment; in
exactly-once mode the reader stops reading a channel as soon as it read its barrier
(``on_barrier_read``), and the alignment reopens it.

Watermarks follow Flink's rule for a task with several upstream subtasks: an edge's
watermark is the minimum over its channels (one per sending subtask), and it is passed on
only when that minimum advances. A channel that delivered its end holds nothing back (its
watermark counts as +infinity), nor does one whose sender said it is idle
(``SenderIdle``), until that sender sends a record or a watermark again. Records keep their position relative to watermarks: a
batch that arrived before a watermark is handed out before it.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from flowsql.runtime.channels import ChannelError, InputGate
from flowsql.runtime.channels.base import Element
from flowsql.runtime.events import (
    MAX_WATERMARK,
    CheckpointBarrier,
    EndOfInput,
    SenderIdle,
    Watermark,
)
from flowsql.runtime.operators.contract import PolledSource
from flowsql.runtime.streaming.executor import ChannelEvent
from flowsql.runtime.time.watermark_merger import WatermarkMerger

#: elements taken from the gate per poll before the polling edge's queue is handed out
READ_AHEAD = 32


class GateReader:
    """Reads a task's gate on behalf of every edge; ``channels[edge]`` lists the gate
    indexes of that edge's channels in sending-subtask order."""

    def __init__(self, gate: InputGate, channels: Mapping[int, Sequence[int]],
                 cancelled: threading.Event) -> None:
        self.gate = gate
        self.cancelled = cancelled
        self._owner = {index: (edge, position) for edge, indexes in channels.items()
                       for position, index in enumerate(indexes)}
        #: told the gate index of every barrier as it is read (barrier alignment)
        self.on_barrier_read: Callable[[int], None] | None = None
        self.queues: dict[int, deque[tuple[int, Element]]] = {edge: deque() for edge in channels}

    def fill(self, wait_s: float) -> None:
        """Move what the gate has into the edge queues; wait up to ``wait_s`` for the first.
        A barrier goes to ``on_barrier_read`` (which may block its channel) at once, so
        nothing behind it is taken from a channel that is to wait."""
        if self.cancelled.is_set():
            raise ChannelError("the job was cancelled")
        timeout = wait_s
        for _ in range(READ_AHEAD):
            if not self.gate.has_readable():
                if timeout:  # every open channel waits for an alignment elsewhere
                    self.cancelled.wait(timeout)
                return
            item = self.gate.next(timeout=timeout)
            if item is None:
                return
            index, element = item
            edge, position = self._owner[index]
            self.queues[edge].append((position, element))
            if isinstance(element, CheckpointBarrier) and self.on_barrier_read is not None:
                self.on_barrier_read(index)
            timeout = 0.0

    def block(self, channel: int) -> None:
        self.gate.block(channel)

    def unblock(self, channel: int) -> None:
        self.gate.unblock(channel)


class EdgeInput(PolledSource):
    """The batches and combined watermarks of one job edge (see the module docstring)."""

    #: not a source of the task's own: the runner does not pause it for an alignment
    exchange_input = True

    def __init__(self, reader: GateReader, edge: int, channels: Sequence[int]) -> None:
        senders = len(channels)
        self.reader = reader
        self.channels = list(channels)
        self.edge = edge
        self.queue = reader.queues[edge]
        self.merger = WatermarkMerger(senders)
        self.open_channels = senders

    def poll(self, max_wait_s: float) -> list[pa.RecordBatch] | None:
        if not self.queue:
            self.reader.fill(max_wait_s)
        out: list[pa.RecordBatch | Watermark | ChannelEvent] = []
        while self.queue:
            position, element = self.queue.popleft()
            if isinstance(element, pa.RecordBatch):
                if element.num_rows:
                    self.merger.on_records(position)
                    out.append(element)
                continue
            if isinstance(element, SenderIdle):
                combined = self.merger.mark_idle(position)
                if combined is not None:
                    out.append(Watermark(combined))
                continue
            if isinstance(element, CheckpointBarrier):
                out.append(ChannelEvent(self.channels[position], element))
                continue
            if isinstance(element, EndOfInput):
                self.open_channels -= 1
                out.append(ChannelEvent(self.channels[position], element))
                timestamp = MAX_WATERMARK
            elif isinstance(element, Watermark):
                timestamp = element.timestamp
            else:
                continue
            combined = self.merger.on_watermark(position, timestamp)
            if combined is not None and combined != MAX_WATERMARK:
                out.append(Watermark(combined))
        if not out and self.open_channels == 0:
            return None
        return out  # type: ignore[return-value]
