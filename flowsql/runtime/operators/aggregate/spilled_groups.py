"""Rows of a GROUP BY spilled to disk, partitioned by a hash of their group keys.

A hash aggregate that outgrows its memory budget writes what it holds (partial aggregates,
or the argument columns of aggregates that cannot be merged) to one spill run per
partition; all rows of a group land in the same partition, so at the end each partition
is aggregated on its own and the union of the partitions' groups is the result. A
partition still too large to hold is split again at the next level (a new salt spreads its
groups differently); a partition whose rows all belong to one group cannot be split, and
:func:`single_group` finds that group so the error can name it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.partitioning import hash_columns
from flowsql.runtime.spill import SpillRun, SpillWriter, partition_by_hash

#: partitions per level: 16 levels of recursion would address 16^16 partitions
PARTITIONS = 16
#: deepest recursion before a partition that still does not fit is given up
MAX_LEVEL = 8


class SpilledGroups:
    """Spill runs being written, one per partition of the group keys at ``level``.

    ``add`` partitions a table (which has the ``keys`` columns) and appends each partition's
    rows to its run; ``finish`` closes the runs and returns them (None for a partition that
    got no rows). ``delete`` removes every run still on disk (idempotent).
    """

    def __init__(self, context: OperatorContext, schema: pa.Schema, keys: list[str],
                 level: int = 0) -> None:
        self._context = context
        self._schema = schema
        self._keys = keys
        self.level = level
        self._writers: list[SpillWriter | None] = [None] * PARTITIONS
        self._runs: list[SpillRun | None] = []

    def add(self, table: pa.Table | pa.RecordBatch) -> None:
        batches = table.to_batches() if isinstance(table, pa.Table) else [table]
        for batch in batches:
            keys = [batch.column(k) for k in self._keys]
            for index, part in enumerate(partition_by_hash(batch, keys, PARTITIONS,
                                                           self.level)):
                if part is not None:
                    self._writer(index).write(part)

    def _writer(self, index: int) -> SpillWriter:
        writer = self._writers[index]
        if writer is None:
            writer = SpillWriter(self._context.spill, self._schema,
                                 f"aggregate-l{self.level}-p{index}", self._context.metrics)
            self._writers[index] = writer
        return writer

    def finish(self) -> list[SpillRun | None]:
        self._runs = [w.finish() if w is not None else None for w in self._writers]
        self._writers = [None] * PARTITIONS
        return list(self._runs)

    def delete(self) -> None:
        for writer in self._writers:
            if writer is not None:
                self._runs.append(writer.finish())
        self._writers = [None] * PARTITIONS
        for run in self._runs:
            if run is not None:
                run.delete()


def single_group(run: SpillRun, keys: list[str]) -> dict[str, Any] | None:
    """The key values of ``run``'s only group, or None when it holds several groups.

    The keys' hashes rule out most runs in one cheap pass; only a run whose hashes are
    all equal is grouped exactly.
    """
    first_hash: int | None = None
    for batch in run.read():
        hashes = hash_columns([batch.column(k) for k in keys])
        if first_hash is None:
            first_hash = int(hashes[0])
        if bool(np.any(hashes != np.uint64(first_hash))):
            return None
    if first_hash is None:
        return None
    distinct = pa.concat_tables(
        pa.Table.from_batches([b]).select(keys).group_by(keys).aggregate([])
        for b in run.read()).group_by(keys).aggregate([])
    if distinct.num_rows != 1:
        return None
    return {k: distinct.column(k)[0].as_py() for k in keys}


def coalesced(run: SpillRun, nbytes: int) -> Iterator[pa.RecordBatch]:
    """``run``'s batches joined into batches of about ``nbytes`` (at least one batch each):
    partitioning a run again splits every batch in ``PARTITIONS``, so without this the
    batches would shrink at every level."""
    pending: list[pa.RecordBatch] = []
    size = 0
    for batch in run.read():
        pending.append(batch)
        size += batch.nbytes
        if size >= nbytes:
            yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]
            pending, size = [], 0
    if pending:
        yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]
