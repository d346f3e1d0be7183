"""UNION / INTERSECT / EXCEPT [ALL] with SQL multiset semantics; NULLs equal each other.

UNION ALL streams both inputs through; the row kinds of an updating input (a streaming
changelog, ``runtime.changelog``) pass through with its rows. Every other kind groups the rows of both inputs
together in one Acero group-by (which treats NULLs as equal, as set operations must),
counting per distinct row how often it occurs on the left (``l``) and on the right
(``r``). Each kind is then a repeat count per distinct row::

    UNION          1                      INTERSECT ALL   min(l, r)
    INTERSECT      1 if l > 0 and r > 0   EXCEPT ALL      max(l - r, 0)
    EXCEPT         1 if l > 0 and r = 0

Spilling: both inputs are held against ``execution.memory-budget``; when it is full, every
row of both inputs goes to a spill run by the hash of the whole row
(:mod:`flowsql.runtime.spill.partition_spill`), the same hash for both inputs, so equal rows
meet in the same partition pair; each pair is then counted as above on its own. The result
is the in-memory one as a multiset (a set operation's output has no order).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from flowsql.planner.physical import SetOpExec
from flowsql.runtime.changelog import is_updating, with_row_kinds
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    empty_batch,
    make_batch,
    table_to_batches,
    to_table,
)
from flowsql.runtime.kernels.grouping import groupable
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.spill.partition_spill import PartitionSpill, partition_groups


def _repeats(kind: str, all_rows: bool, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    if kind == "union":
        return np.ones_like(left)
    if kind == "intersect":
        return np.minimum(left, right) if all_rows else ((left > 0) & (right > 0)).astype(np.int64)
    if all_rows:
        return np.maximum(left - right, 0)
    return ((left > 0) & (right == 0)).astype(np.int64)


class SetOpOperator(Operator):
    """Blocking except for UNION ALL; holds both inputs against the memory budget, or
    spills them into hash partition pairs when it is full (see module doc)."""

    def __init__(self, node: SetOpExec) -> None:
        self.node = node
        self._streaming = node.kind == "union" and node.all

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._inputs: tuple[list[pa.RecordBatch], list[pa.RecordBatch]] = ([], [])
        self._ended = 0
        self._memory = HeldMemory(context)
        self._spills: list[PartitionSpill] | None = None

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        width = len(self.node.fields)
        kinds = batch.column(width) if is_updating(batch, width) else None
        batch = make_batch(batch.columns[:width], self.node.fields, batch.num_rows)
        if self._streaming:
            return (batch if kinds is None else with_row_kinds(batch, kinds),)
        if self._spills is not None:
            self._spills[input].write(batch)
            return ()
        self._inputs[input].append(batch)
        if not self.node.fields:  # rows without columns cannot be hashed apart
            self._memory.hold(batch_nbytes(batch))
        elif not self._memory.try_hold(batch_nbytes(batch)):
            self._start_spilling(batch.schema)
        return ()

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        self._ended += 1
        if self._streaming or self._ended < 2:
            return ()
        if self._spills is not None:
            return self._spilled_output(self._spills)
        tables = [to_table(batches or [empty_batch(self.node.fields)], len(self.node.fields))
                  for batches in self._inputs]
        table = self._combine(tables)
        self._inputs = ([], [])
        self._memory.release_all()
        return table_to_batches(table, self.node.fields, batch_size(self.context.settings))

    def close(self) -> None:
        self._memory.release_all()

    # -- spilling -------------------------------------------------------------------------

    @staticmethod
    def _keys_of(batch: pa.RecordBatch) -> list[pa.Array]:
        return [groupable(c) for c in batch.columns]

    def _start_spilling(self, schema: pa.Schema) -> None:
        self._spills = [PartitionSpill(self.context, schema, "set operation", self._keys_of)
                        for _ in self._inputs]
        for spill, batches in zip(self._spills, self._inputs):
            for batch in batches:
                spill.write(batch)
        self._inputs = ([], [])
        self._memory.release_all()

    def _spilled_output(self, spills: list[PartitionSpill]) -> Iterator[pa.RecordBatch]:
        empty = pa.Table.from_batches([empty_batch(self.node.fields)])
        size = batch_size(self.context.settings)
        runs = [spill.finish() for spill in spills]
        for pair in partition_groups(self.context, runs, [self._keys_of] * len(runs),
                                     "set operation"):
            table = self._combine([empty if t is None else t for t in pair])
            yield from table_to_batches(table, self.node.fields, size)

    # -- counting -------------------------------------------------------------------------

    def _combine(self, tables: Sequence[pa.Table]) -> pa.Table:
        """The result rows of the left and right rows ``tables`` (columns by position)."""
        width = len(self.node.fields)
        names = [f"c{i}" for i in range(width)]
        sides = []
        for side, table in enumerate(tables):
            columns = [groupable(c) for c in table.columns]
            flags = [np.full(table.num_rows, int(side == s), dtype=np.int64) for s in (0, 1)]
            sides.append(pa.table([*columns, *flags], names=[*names, "l", "r"]))
        both = pa.concat_tables(sides)
        grouped = both.group_by(names, use_threads=True).aggregate([("l", "sum"), ("r", "sum")])
        counts = _repeats(self.node.kind, self.node.all,
                          grouped.column("l_sum").to_numpy(), grouped.column("r_sum").to_numpy())
        rows = np.repeat(np.arange(grouped.num_rows), counts)
        return grouped.select(names).take(pa.array(rows))
