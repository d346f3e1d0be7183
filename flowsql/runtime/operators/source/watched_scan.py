"""Scan of a watched filesystem table (``'source.monitor-interval'`` set): an unbounded
source that reads every new file of the directory once.

Contract: a :class:`PolledSource` that never ends -- ``poll`` returns the batches available
now, or ``[]`` (never None). Each batch holds rows of one file; files are read in name
order, each completely before the next, new files are looked for every monitor interval
(see ``flowsql.runtime.connectors.watch``). Reading, projection and the exact filters are
those of the bounded scan (``ScanOperator``): ``scan_files`` of the filesystem connector
parses the formats, so both scans read a file identically (including
``*.ignore-parse-errors``, counted in ``context.metrics``).

Timing: with nothing to read, ``poll`` waits for the next listing but never beyond
``max_wait_s``; once it has a batch it returns it at once. Reading one Arrow batch of a
file is not interruptible, so a poll may overrun ``max_wait_s`` by that much.

State (all in the operator's :class:`StateStore`, so a checkpoint captures it):

* ``done`` (list state, union): the files this source has read completely;
* ``reading`` (list state, union): the files found but not finished, in reading order,
  each with the number of file rows (before filtering) already emitted.

The open file reader itself is a cursor rebuilt from ``reading`` after a restore by
skipping the emitted rows, so a restored source neither repeats nor loses rows. Both
lists are union-distributed: after a rescale every subtask knows every file ever read
(none is read again) and takes over the unfinished files it now owns (files are split
between subtasks by a stable hash of their name).
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import CatalogError
from flowsql.planner.expressions import conjoin
from flowsql.planner.physical import TableScanExec
from flowsql.runtime.connectors.filesystem import scan_files
from flowsql.runtime.connectors.watch import monitor_interval, owner, resolve, visible_files
from flowsql.runtime.expressions import compile_predicate
from flowsql.runtime.kernels.batches import batch_size, make_batch
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.contract import PolledSource
from flowsql.runtime.state.store import StateStore

_DONE = pa.schema([pa.field("path", pa.string(), nullable=False)])
_READING = pa.schema([pa.field("path", pa.string(), nullable=False),
                      pa.field("emitted", pa.int64(), nullable=False)])


class WatchedScanOperator(PolledSource):
    def __init__(self, node: TableScanExec) -> None:
        self.node = node
        interval = monitor_interval(node.table.options)
        if interval is None:
            raise CatalogError(f"table '{node.table.name}' is not watched: set "
                               "'source.monitor-interval'")
        self.interval = interval
        self.directory = node.table.options.get("path") or ""
        if not self.directory:
            raise CatalogError(f"filesystem table '{node.table.name}' needs a 'path' option")
        predicate = conjoin(node.filters)
        self._keep = compile_predicate(predicate, node.fields) if predicate is not None else None
        self._cursor: Generator[pa.RecordBatch, None, None] | None = None
        self._next_listing = 0.0

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._store = StateStore.for_context(context)
        self._done = self._store.list_state("done", _DONE, "union")
        self._reading = self._store.list_state("reading", _READING, "union")
        self._batch_size = batch_size(context.settings)

    # -- polling -------------------------------------------------------------------------------

    def poll(self, max_wait_s: float) -> list[pa.RecordBatch]:
        deadline = time.monotonic() + max(0.0, max_wait_s)
        while True:
            batch = self._next_batch()
            if batch is not None:
                return [batch]
            now = time.monotonic()
            if now >= deadline:
                return []
            # nothing to read until the next listing: wait for it, within the deadline
            time.sleep(max(0.0, min(deadline, self._next_listing) - now))

    def _next_batch(self) -> pa.RecordBatch | None:
        """The next non-empty batch, listing the directory when the interval is due; None
        when every known file is read and no listing is due."""
        while True:
            if self._cursor is None:
                if not self._reading.rows.num_rows and time.monotonic() >= self._next_listing:
                    self._discover()
                if not self._reading.rows.num_rows:
                    return None
                self._cursor = self._open_current()
            raw = next(self._cursor, None)
            if raw is None:
                self._finish_current()
                continue
            self._advance(raw.num_rows)
            batch = make_batch(raw.columns, self.node.fields, raw.num_rows)
            if self._keep is not None:
                batch = batch.filter(self._keep(batch))
            if batch.num_rows:
                return batch

    def _discover(self) -> None:
        self._next_listing = time.monotonic() + self.interval
        names = [n for n in visible_files(self.directory)
                 if owner(n, self.context.parallelism) == self.context.subtask_index]
        if not names:
            return
        listed = pa.array(names, pa.string())
        new = listed.filter(pc.invert(pc.is_in(listed, value_set=self._done.rows["path"])))
        if len(new):
            self._reading.add(pa.table({"path": new, "emitted": pa.array([0] * len(new),
                                                                         pa.int64())}))

    def _open_current(self) -> Generator[pa.RecordBatch, None, None]:
        path = self._reading.rows["path"][0].as_py()
        skip = self._reading.rows["emitted"][0].as_py()
        batches = scan_files(self.node.table, [resolve(self.directory, path)],
                             [f.name for f in self.node.fields], list(self.node.filters),
                             self._batch_size, self.context.metrics)
        return _skip_rows(batches, skip)

    def _advance(self, rows: int) -> None:
        reading = self._reading.rows
        emitted = reading["emitted"].to_pylist()
        emitted[0] += rows
        self._reading.update(reading.set_column(1, "emitted", pa.array(emitted, pa.int64())))

    def _finish_current(self) -> None:
        reading = self._reading.rows
        self._done.add(reading.slice(0, 1).select(["path"]))
        self._reading.update(reading.slice(1))
        self._close_cursor()

    # -- checkpoints --------------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)
        reading = self._reading.rows
        mine = [owner(p, self.context.parallelism) == self.context.subtask_index
                for p in reading["path"].to_pylist()]
        self._reading.update(reading.filter(pa.array(mine, pa.bool_())))
        # the union of several old subtasks' lists: each file once
        self._done.update(pa.table({"path": pc.unique(self._done.rows["path"])}))
        self._close_cursor()
        self._next_listing = 0.0

    def close(self) -> None:
        self._close_cursor()

    def _close_cursor(self) -> None:
        if self._cursor is not None:
            cursor, self._cursor = self._cursor, None
            cursor.close()  # releases the open file reader


def _skip_rows(batches: Iterator[pa.RecordBatch], rows: int
               ) -> Generator[pa.RecordBatch, None, None]:
    """``batches`` without their first ``rows`` rows (already emitted before a restore)."""
    for batch in batches:
        if rows and rows >= batch.num_rows:
            rows -= batch.num_rows
            continue
        yield batch.slice(rows) if rows else batch
        rows = 0
