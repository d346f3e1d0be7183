"""One read of a table handed to several consumers: the leaves of a statement set that read
the same table (``planner.physical_statement_set``).

A :class:`ScanTee` runs the group's scan operator once per run. Each leaf's operator asks
the tee for its next batches: the leaf's own queue first; when that is empty, the tee reads
the next batches from the scan and appends them to every other leaf's queue. The streaming
runner drives one job in one thread and polls its sources in turn, so the queues stay
short and no locking is needed.

A batch statement set in this process runs each INSERT in its own thread
(``runtime.statement_set_run``); it installs a :class:`ConcurrentScanTee` for each group
(``use_tee``), which bounds every queue, so the INSERTs read the shared rows together
instead of one after the other. A run on worker processes has no tees: the job graph turns
each group into a stage with one output edge per leaf (``runtime.jobgraph``).

The scan opens with the first leaf's context and closes when the last leaf closes; the tee
then starts afresh (a restarted run reads again).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Protocol
from weakref import WeakKeyDictionary

import pyarrow as pa

from flowsql.planner.physical_statement_set import ScanGroup, SharedScanExec
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.contract import PolledSource

__all__ = ["ScanTee", "SharedScanOperator", "StatementSetOperator", "Tee", "tee_of", "use_tee"]


class ScanTee:
    """The shared read of ``group.scan`` (see the module docstring)."""

    def __init__(self, group: ScanGroup) -> None:
        self.group = group
        self._queues: list[deque[pa.RecordBatch]] = [deque() for _ in range(group.consumers)]
        self._scan: Operator | None = None
        self._produced: Iterator[pa.RecordBatch] | None = None
        self._ended = False
        self._closed = 0

    def open(self, context: OperatorContext) -> None:
        if self._scan is None:
            from flowsql.runtime.registry import create_operator

            self._scan = create_operator(self.group.scan)
            self._scan.open(context)

    def poll(self, index: int, max_wait_s: float) -> list[pa.RecordBatch] | None:
        """Leaf ``index``'s next batches (possibly none yet); None once the scan ended and
        the leaf has taken everything."""
        queue = self._queues[index]
        if queue:
            taken = list(queue)
            queue.clear()
            return taken
        if self._ended:
            return None
        read = self._read(max_wait_s)
        if read is None:
            self._ended = True
            return None
        for other, waiting in enumerate(self._queues):
            if other != index:
                waiting.extend(read)
        return read

    def _read(self, max_wait_s: float) -> list[pa.RecordBatch] | None:
        scan = self._scan
        assert scan is not None, "the shared scan was not opened"
        if isinstance(scan, PolledSource):
            return scan.poll(max_wait_s)
        if self._produced is None:
            self._produced = scan.produce()  # type: ignore[attr-defined]
        batch = next(self._produced, None)
        return None if batch is None else [batch]

    def close(self, index: int) -> None:
        """Leaf ``index`` closed; the last one closes the scan and resets the tee."""
        self._queues[index].clear()
        self._closed += 1
        if self._closed < self.group.consumers:
            return
        scan, self._scan = self._scan, None
        self._produced, self._ended, self._closed = None, False, 0
        for queue in self._queues:
            queue.clear()
        if scan is not None:
            scan.close()


class Tee(Protocol):
    """What a leaf asks of the shared read of its group."""

    def open(self, context: OperatorContext) -> None: ...

    def poll(self, index: int, max_wait_s: float) -> list[pa.RecordBatch] | None: ...

    def close(self, index: int) -> None: ...


#: the tee of each group, for as long as the plan holding the group lives
_TEES: WeakKeyDictionary[ScanGroup, Tee] = WeakKeyDictionary()


def tee_of(group: ScanGroup) -> Tee:
    """The tee of ``group``: the one installed by ``use_tee``, else a :class:`ScanTee`."""
    tee = _TEES.get(group)
    if tee is None:
        tee = _TEES[group] = ScanTee(group)
    return tee


def use_tee(group: ScanGroup, tee: Tee) -> None:
    """Make ``tee`` the shared read of ``group`` for the leaves created from now on."""
    _TEES[group] = tee


class SharedScanOperator(PolledSource):
    """A leaf of a shared read: the columns it needs, taken by name from the tee's batches
    (a changelog source's row kinds, after the scan's fields, are kept)."""

    def __init__(self, node: SharedScanExec) -> None:
        self.node = node
        shared = [f.name for f in node.group.scan.fields]
        self._columns = [shared.index(f.name) for f in node.fields]
        self._width = len(shared)
        self._schema = pa.schema([pa.field(f.name, f.dtype) for f in node.fields])
        self._tee = tee_of(node.group)

    def open(self, context: OperatorContext) -> None:
        self._tee.open(context)

    def poll(self, max_wait_s: float) -> list[pa.RecordBatch] | None:
        read = self._tee.poll(self.node.index, max_wait_s)
        if read is None:
            return None
        return [self._select(batch) for batch in read]

    def _select(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        extra = list(range(self._width, batch.num_columns))  # row kinds of a changelog
        columns = [batch.column(i) for i in [*self._columns, *extra]]
        names = [*self._schema.names, *(batch.schema.field(i).name for i in extra)]
        return pa.RecordBatch.from_arrays(columns, names=names)

    def close(self) -> None:
        self._tee.close(self.node.index)


class StatementSetOperator(Operator):
    """The root of a statement set: its inputs are sinks, which emit nothing; it waits for
    all of them to end."""

    def __init__(self, node: object) -> None:
        self.node = node

    def process_batch(self, input: int, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        return []
