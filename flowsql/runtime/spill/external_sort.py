"""External merge sort: order more rows than the memory budget holds.

Rows arrive as batches whose last ``len(specs)`` columns are the evaluated sort keys (the
caller appends them, so nothing is evaluated twice and a merge reads its keys straight
from the spilled files). The sorter holds batches while ``HeldMemory.try_hold`` allows;
when the budget refuses, it sorts what it holds into a *run* (an Arrow IPC file, see
:class:`~flowsql.runtime.spill.SpillWriter`), releases the memory and goes on. At the end,
if nothing was spilled, the rows are sorted in memory exactly as an in-memory sort would;
otherwise the rest is spilled as the last run and the runs are merged.

The merge is vectorized: every run contributes a *block* (its next rows); the *cutoff* is
the smallest last row of a block among the runs that have more rows on disk (ties: the
lower run index). No row after the cutoff can precede it, so the rows of all blocks up to
the cutoff are sorted together with :func:`~flowsql.runtime.kernels.ordering.sort_indices`
and emitted, and the blocks keep their unemitted rest. Ordering is exactly the in-memory
sort's, stability included: runs are cut in input order, the blocks are concatenated in
run order and the sort is stable, so rows with equal keys come out in input order (ties
across runs broken by run index, within a run by position). If one block per run would
not fit the budget, the runs are merged in passes (consecutive runs at a time, so input
order is kept) into fewer, longer runs until one pass can finish.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from flowsql.planner.expressions import SortKey
from flowsql.runtime.kernels.batches import take_rows
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.kernels.ordering import sort_indices
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.spill.spill_run import SpillRun, SpillWriter

#: fewest rows per run a merge block holds; a budget that cannot hold two such blocks
#: (fan-in 2) cannot make progress, and the merge raises ResourceExhausted
MIN_BLOCK_ROWS = 64
#: block rows aimed at when choosing the fan-in: fewer, larger blocks per round rather than
#: many tiny ones (each round has a fixed cost), at the price of an extra merge pass
_TARGET_BLOCK_ROWS = 1024
#: the budget is shared by a round's blocks, their concatenation and the sorted output
_ROUND_COPIES = 3
#: a run is written in batches of at most this share of the budget, so reading one batch
#: ahead per run during a merge stays a small part of it
_RUN_BATCH_SHARE = 16


class ExternalSorter:
    """Sorts the rows ``add``-ed (keys as the last columns) under the memory budget.

    Call order: ``add`` per batch, then iterate ``sorted_tables`` once, then ``close``
    (also after an error or an early stop: it releases the memory and deletes the runs).
    The tables ``sorted_tables`` yields carry all columns (keys included) in order.
    """

    def __init__(self, context: OperatorContext, specs: Sequence[SortKey], label: str,
                 batch_rows: int) -> None:
        self._context = context
        self._specs = tuple(specs)
        self._label = label
        self._batch_rows = batch_rows
        self._memory = HeldMemory(context)
        self._held: list[pa.RecordBatch] = []
        self._schema: pa.Schema | None = None
        self._runs: list[SpillRun] = []

    @property
    def spilled(self) -> bool:
        return bool(self._runs)

    def add(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if self._schema is None:
            self._schema = batch.schema
        self._held.append(batch)
        if not self._memory.try_hold(batch.nbytes):
            self._spill_held()  # the batch that did not fit goes into the run too

    def add_sorted(self, table: pa.Table) -> None:
        """Rows already in order (the same columns as ``add``'s batches) become a run of
        their own, written at once and never held: an operator that produces ordered
        pieces (a spilled window's partitions, in input order) only needs the merge. They
        follow the rows added before them in the order of equal keys."""
        if table.num_rows == 0:
            return
        if self._schema is None:
            self._schema = table.schema
        if self._held:
            self._spill_held()
        self._runs.append(self._write(iter([table])))

    def sorted_tables(self) -> Iterator[pa.Table]:
        if not self._held and not self._runs:
            return
        if not self._runs:
            table = self._held_table()
            yield take_rows(table, self._order(table))
            self._held = []
            self._memory.release_all()
            return
        if self._held:
            self._spill_held()
        runs, self._runs = self._runs, []
        try:
            yield from self._merge(runs)
        finally:
            for run in runs:
                run.delete()

    def close(self) -> None:
        self._held = []
        self._memory.release_all()
        for run in self._runs:
            run.delete()
        self._runs = []

    # -- runs -----------------------------------------------------------------------------

    def _held_table(self) -> pa.Table:
        assert self._schema is not None
        return pa.Table.from_batches(self._held, schema=self._schema)

    def _order(self, table: pa.Table) -> pa.Array:
        keys = table.columns[table.num_columns - len(self._specs):]
        return sort_indices(keys, self._specs, table.num_rows)

    def _spill_held(self) -> None:
        table = self._held_table()
        self._runs.append(self._write(iter([take_rows(table, self._order(table))])))
        self._held = []
        self._memory.release_all()

    def _write(self, tables: Iterator[pa.Table]) -> SpillRun:
        assert self._schema is not None
        writer = SpillWriter(self._context.spill, self._schema, self._label,
                             self._context.metrics)
        try:
            for table in tables:
                for batch in table.combine_chunks().to_batches(self._run_batch_rows(table)):
                    writer.write(batch)
        except BaseException:  # a failed merge pass leaves no partial run behind
            writer.finish().delete()
            raise
        return writer.finish()

    def _run_batch_rows(self, table: pa.Table) -> int:
        """Rows per batch of a run: ``execution.batch-size``, fewer under a small budget."""
        limit = self._context.memory.limit
        if limit is None or table.num_rows == 0:
            return self._batch_rows
        row_bytes = max(table.nbytes / table.num_rows, 1.0)
        rows = int(limit // (_RUN_BATCH_SHARE * row_bytes))
        return max(MIN_BLOCK_ROWS, min(self._batch_rows, rows))

    # -- merging --------------------------------------------------------------------------

    def _merge(self, runs: list[SpillRun]) -> Iterator[pa.Table]:
        """The rows of ``runs`` in order; intermediate passes while the fan-in is short."""
        while True:
            fan_in, block_rows = self._merge_plan(runs)
            if fan_in >= len(runs):
                yield from self._merge_group(runs, block_rows)
                return
            merged: list[SpillRun] = []
            for start in range(0, len(runs), fan_in):
                group = runs[start:start + fan_in]
                if len(group) == 1:
                    merged.append(group[0])
                    continue
                merged.append(self._write(self._merge_group(group, block_rows)))
                for run in group:
                    run.delete()
            runs[:] = merged

    def _merge_plan(self, runs: Sequence[SpillRun]) -> tuple[int, int]:
        """(fan-in, rows per block) that fit what the budget has available."""
        available = self._context.memory.available
        if available is None:
            return len(runs), self._batch_rows
        row_bytes = max(max(run.nbytes / max(run.rows, 1) for run in runs), 1.0)
        per_block_row = _ROUND_COPIES * row_bytes
        fan_in = max(2, int(available // (per_block_row * _TARGET_BLOCK_ROWS)))
        fan_in = min(fan_in, len(runs))
        block_rows = int(available // (per_block_row * fan_in))
        return fan_in, max(MIN_BLOCK_ROWS, min(self._batch_rows, block_rows))

    def _merge_group(self, runs: Sequence[SpillRun], block_rows: int) -> Iterator[pa.Table]:
        cursors = [_RunCursor(run) for run in runs]
        held = HeldMemory(self._context)
        try:
            while True:
                for cursor in cursors:
                    cursor.fill(block_rows)
                live = [c for c in cursors if c.block.num_rows]
                if not live:
                    return
                held.release_all()
                held.hold(sum(c.block.nbytes for c in live))
                yield self._merge_round(live)
        finally:
            held.release_all()
            for cursor in cursors:
                cursor.close()

    def _merge_round(self, live: list[_RunCursor]) -> pa.Table:
        """Emit the rows of the blocks up to the cutoff, in order; the blocks keep the rest."""
        nkeys = len(self._specs)
        candidates = [i for i, c in enumerate(live) if c.has_more]
        if not candidates:  # every run is in memory: all rows can go
            taking = list(range(len(live)))
            cutoff = None
        else:
            # the cutoff: the smallest block end of a run with more rows on disk (stable
            # sort over run order, so equal ends pick the lowest run index)
            ends = pa.concat_tables([live[i].block.slice(live[i].block.num_rows - 1)
                                     for i in candidates])
            first = int(sort_indices(ends.columns[-nkeys:], self._specs, len(candidates))[0]
                        .as_py())
            cutoff = candidates[first]
            taking = self._blocks_reaching(live, cutoff)
        if cutoff is not None and taking == [cutoff]:
            # only the cutoff's own block is due, and a run's block is sorted already
            out = live[cutoff].block
            live[cutoff].consume(out.num_rows)
            return out
        blocks = [live[i].block for i in taking]
        lengths = np.array([b.num_rows for b in blocks], dtype=np.int64)
        combined = pa.concat_tables(blocks)
        order = np.asarray(sort_indices(combined.columns[-nkeys:], self._specs,
                                        combined.num_rows))
        if cutoff is not None:
            cutoff_row = int(lengths[:taking.index(cutoff) + 1].sum()) - 1
            order = order[:int(np.flatnonzero(order == cutoff_row)[0]) + 1]
        owner = np.repeat(np.arange(len(taking)), lengths)
        counts = np.bincount(owner[order], minlength=len(taking))
        for i, count in zip(taking, counts):
            live[i].consume(int(count))
        return combined.take(pa.array(order))

    def _blocks_reaching(self, live: list[_RunCursor], cutoff: int) -> list[int]:
        """Indexes of the blocks whose first row is not after the cutoff row (the others
        have nothing to emit this round). The cutoff row is placed right after its own
        block's first row, so the stable sort orders ties by run index."""
        nkeys = len(self._specs)
        firsts = [c.block.slice(0, 1) for c in live]
        end = live[cutoff].block
        rows = [*firsts[:cutoff + 1], end.slice(end.num_rows - 1), *firsts[cutoff + 1:]]
        probe = pa.concat_tables(rows)
        order = np.asarray(sort_indices(probe.columns[-nkeys:], self._specs, len(rows)))
        position = int(np.flatnonzero(order == cutoff + 1)[0])
        before = np.sort(order[:position])
        return [int(i) if i <= cutoff else int(i) - 1 for i in before]


class _RunCursor:
    """Reads one run block by block: ``block`` holds its next rows, ``has_more`` says
    whether rows remain on disk beyond them. The run is read with ordinary file reads,
    not a memory mapping: the batches read are freed once merged, where mapped pages
    would stay in the process's resident memory until the whole run is closed."""

    def __init__(self, run: SpillRun) -> None:
        self._batches = _streamed(run)
        self._pending: pa.RecordBatch | None = None
        self.block = pa.Table.from_batches([], schema=run.schema)
        self.has_more = True

    def fill(self, rows: int) -> None:
        pieces = self.block.to_batches()
        have = self.block.num_rows
        while have < rows and self._next_pending():
            assert self._pending is not None
            piece = self._pending.slice(0, rows - have)
            self._pending = self._pending.slice(piece.num_rows)
            pieces.append(piece)
            have += piece.num_rows
        self.block = pa.Table.from_batches(pieces, schema=self.block.schema)
        self.has_more = self._next_pending()

    def _next_pending(self) -> bool:
        while self._pending is None or self._pending.num_rows == 0:
            self._pending = next(self._batches, None)
            if self._pending is None:
                return False
        return True

    def consume(self, rows: int) -> None:
        self.block = self.block.slice(rows)

    def close(self) -> None:
        self._pending = None
        self._batches.close()


def _streamed(run: SpillRun) -> Generator[pa.RecordBatch, None, None]:
    """The run's batches in order, read from the file one at a time (closing the
    generator closes the file)."""
    with pa.OSFile(run.path, "rb") as source:
        yield from ipc.open_stream(source)
