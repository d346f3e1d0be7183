"""The receiving side of a job edge inside a stage: an operator that yields what arrives.

A subtask reads all its input channels through one :class:`InputGate`. The pull-based
pipeline consumes its inputs one at a time (a hash join drains its build side before its
probe side), so while one exchange is read the gate blocks the channels of every other
one: their senders run out of credits and wait, which is back-pressure, not loss. A merge
join reads two exchanges interleaved, so each source re-selects its own channels before
every read. Control
events (watermarks, barriers) carry no meaning for a bounded query and are skipped.

A consumer that stops early (a satisfied LIMIT) leaves channels unfinished; the stage task
drains them after its pipeline ends (``drain``), because senders must see their channels
through to end of input or they would fail the job.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

from flowsql.runtime.channels import ChannelError, InputGate
from flowsql.runtime.operators.contract import Source

#: how often a subtask waiting for input checks whether its job was cancelled
POLL_S = 0.2


class ExchangeSource(Source):
    """Yields the batches of the gate channels ``channels`` until each delivered its end."""

    def __init__(self, gate: InputGate, channels: Sequence[int],
                 cancelled: threading.Event) -> None:
        self.gate = gate
        self.channels = list(channels)
        self.cancelled = cancelled

    def produce(self) -> Iterator[pa.RecordBatch]:
        yield from _batches(self.gate, self.channels, self.cancelled, self._select)

    def _select(self) -> None:
        """Let the gate hand out elements of this source's channels only."""
        mine = set(self.channels)
        for index in range(len(self.gate.channels)):
            if index in mine:
                self.gate.unblock(index)
            else:
                self.gate.block(index)


def drain(gate: InputGate, cancelled: threading.Event) -> None:
    """Read and drop whatever is left on every channel of ``gate``."""
    for index in range(len(gate.channels)):
        gate.unblock(index)
    for _ in _batches(gate, range(len(gate.channels)), cancelled):
        pass


def _batches(gate: InputGate, channels: Sequence[int], cancelled: threading.Event,
             select: Callable[[], None] = lambda: None) -> Iterator[pa.RecordBatch]:
    while not all(gate.is_finished(i) for i in channels):
        if cancelled.is_set():
            raise ChannelError("the job was cancelled")
        select()
        item = gate.next(timeout=POLL_S)
        if item is not None and isinstance(item[1], pa.RecordBatch):
            yield item[1]
