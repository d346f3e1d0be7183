"""The shared read of a statement set's table for leaves pulled by different threads.

A batch statement set in this process runs each INSERT in its own thread, so the leaves of
one group (``planner.physical_statement_set``) are pulled concurrently. The read is driven
by its consumers, as :class:`~flowsql.runtime.operators.source.shared_scan.ScanTee`'s is:
a leaf whose queue is empty reads the scan's next batch itself (one reader at a time, the
lock released while it reads) and appends it to the queue of every other open leaf.

Every queue holds at most ``capacity`` batches: a leaf whose queue is full holds the read
back until it takes its batches (back-pressure, as a bounded channel between tasks does),
so the rows waiting in memory are bounded by ``capacity`` batches per leaf whatever the
table's size. That cannot deadlock because the leaves of one group belong to different
INSERTs (``session.execute.statement_set.share_scans`` shares a table only across
INSERTs): the INSERT a full queue waits for never waits, in turn, for this read. A leaf
that closed (its INSERT ended early or failed) no longer receives batches.

``stop`` (an event the run sets when it is cancelled or one INSERT failed) makes every
waiting leaf raise, so no thread waits forever for a consumer that is gone.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.physical_statement_set import ScanGroup
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.contract import Source

__all__ = ["ConcurrentScanTee"]

#: seconds a waiting leaf sleeps before it looks at ``stop`` again
_WAKE_S = 0.1


class ConcurrentScanTee:
    """See the module docstring. ``batches_read`` and ``rows_read`` count what the scan
    produced: each row once, however many leaves take it; ``peak_waiting`` is the most
    batches that ever waited in one leaf's queue."""

    def __init__(self, group: ScanGroup, capacity: int, stop: threading.Event) -> None:
        if capacity < 1:
            raise ExecutionError(f"a shared read needs room for a batch, got {capacity}")
        self.group = group
        self.capacity = capacity
        self.stop = stop
        self.batches_read = 0
        self.rows_read = 0
        self.peak_waiting = 0
        self._lock = threading.Condition()
        self._queues: list[deque[pa.RecordBatch]] = [deque() for _ in range(group.consumers)]
        self._open = set(range(group.consumers))
        self._scan: Operator | None = None
        self._produced: Iterator[pa.RecordBatch] | None = None
        self._reading = False
        self._ended = False
        self._failed = False

    def open(self, context: OperatorContext) -> None:
        with self._lock:
            if self._scan is None:
                from flowsql.runtime.registry import create_operator

                scan = create_operator(self.group.scan)
                scan.open(context)
                assert isinstance(scan, Source), "a shared read must be a source"
                self._scan, self._produced = scan, scan.produce()

    def poll(self, index: int, max_wait_s: float) -> list[pa.RecordBatch] | None:
        """Leaf ``index``'s next batches; None once the scan ended and the leaf has taken
        everything. Waits (without bound, but watching ``stop``) while another leaf reads
        or a full queue holds the read back."""
        with self._lock:
            while True:
                if self.stop.is_set() or self._failed:
                    raise ExecutionError(
                        f"the shared read of table '{self.group.scan.table.name}' stopped: "
                        "the statement set was cancelled or one of its INSERTs failed")
                queue = self._queues[index]
                if queue:
                    taken = list(queue)
                    queue.clear()
                    self._lock.notify_all()
                    return taken
                if self._ended:
                    return None
                if not self._reading and not self._held_back(index):
                    self._reading = True
                    break
                self._lock.wait(_WAKE_S)
        batch = self._read()
        with self._lock:
            self._reading = False
            self._lock.notify_all()
            if batch is None:
                self._ended = True
                return None
            self.batches_read += 1
            self.rows_read += batch.num_rows
            for other in self._open - {index}:
                queue = self._queues[other]
                queue.append(batch)
                self.peak_waiting = max(self.peak_waiting, len(queue))
            return [batch]

    def _held_back(self, index: int) -> bool:
        return any(len(self._queues[other]) >= self.capacity for other in self._open
                   if other != index)

    def _read(self) -> pa.RecordBatch | None:
        """The scan's next batch, read outside the lock; a failure raises here and makes
        every other leaf raise at its next poll."""
        assert self._produced is not None, "the shared read was not opened"
        try:
            while (batch := next(self._produced, None)) is not None:
                if batch.num_rows:
                    return batch
            return None
        except BaseException:
            with self._lock:
                self._reading = False
                self._failed = True
                self._lock.notify_all()
            raise

    def close(self, index: int) -> None:
        """Leaf ``index`` closed; the last one closes the scan."""
        with self._lock:
            self._open.discard(index)
            self._queues[index].clear()
            self._lock.notify_all()
            if self._open:
                return
            scan, self._scan, self._produced = self._scan, None, None
        if scan is not None:
            scan.close()
