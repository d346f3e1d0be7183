"""Hash-partitioned spilling for operators that work per key group: window functions (per
PARTITION BY group) and set operations (per distinct row).

Such an operator, when its input outgrows the memory budget, writes every row to one of
``partitions`` spill runs by a salted hash of its keys (:class:`PartitionSpill`); rows with
equal keys share a run, so each run can be processed on its own. :func:`partition_groups`
then hands the runs back one partition at a time (the runs of several inputs side by side:
a set operation's two inputs), read into memory and held against the budget; a partition
that still does not fit is split again with the next salt (``level``), and one that cannot
be split (all its rows have one key) fails with ResourceExhausted naming that key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

from flowsql.errors import ResourceExhausted
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.spill.hash_partitions import partition_by_hash
from flowsql.runtime.spill.spill_run import SpillRun, SpillWriter

#: runs a spilling operator splits its input into (and each too-large run, again)
PARTITIONS = 16
#: splits of one partition before giving up: 16**6 partitions separate any keys a hash
#: can tell apart, so a partition still too large holds rows of (nearly) one key
MAX_LEVEL = 6

#: the key arrays of a batch (evaluated by the operator: columns or expressions)
KeysOf = Callable[[pa.RecordBatch], Sequence[pa.Array]]


class PartitionSpill:
    """Rows of one input written to ``partitions`` runs by the hash of their keys; rows
    keep their input order within each run."""

    def __init__(self, context: OperatorContext, schema: pa.Schema, label: str,
                 keys_of: KeysOf, level: int = 0, partitions: int = PARTITIONS) -> None:
        self._context = context
        self._schema = schema
        self._label = label
        self._keys_of = keys_of
        self._level = level
        self._writers: list[SpillWriter | None] = [None] * partitions

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        parts = partition_by_hash(batch, list(self._keys_of(batch)), len(self._writers),
                                  self._level)
        for index, part in enumerate(parts):
            if part is None:
                continue
            writer = self._writers[index]
            if writer is None:
                writer = self._writers[index] = SpillWriter(
                    self._context.spill, self._schema, self._label, self._context.metrics)
            writer.write(part)

    def finish(self) -> list[SpillRun | None]:
        """One run per partition (None where no row went)."""
        runs = [None if w is None else w.finish() for w in self._writers]
        self._writers = [None] * len(self._writers)
        return runs


def partition_groups(context: OperatorContext, sides: Sequence[Sequence[SpillRun | None]],
                     keys_of: Sequence[KeysOf], label: str, level: int = 0
                     ) -> Iterator[list[pa.Table | None]]:
    """Partition by partition, the tables of every side (None: no rows on that side),
    held against the budget while the consumer works on them (until it asks for the next
    partition). A partition whose sides together do not fit is split again by the hash at
    ``level + 1``; every run is deleted once it has been handed out or split."""
    memory = HeldMemory(context)
    partitions = max(len(side) for side in sides)
    try:
        for index in range(partitions):
            runs = [side[index] if index < len(side) else None for side in sides]
            nbytes = sum(run.nbytes for run in runs if run is not None)
            if nbytes == 0:
                _delete(runs)
                continue
            if memory.try_hold(nbytes):
                tables = [None if run is None else run.read_table() for run in runs]
                _delete(runs)
                yield tables
                memory.release_all()
                continue
            split = _split(context, runs, keys_of, label, level + 1)
            if split is None:  # one key: held beyond this operator's share, if there is room
                if not memory.try_hold(nbytes, beyond_share=True):
                    message = _one_key_message(context, runs, keys_of)
                    _delete(runs)
                    raise ResourceExhausted(message)
                tables = [None if run is None else run.read_table() for run in runs]
                _delete(runs)
                yield tables
                memory.release_all()
                continue
            _delete(runs)
            yield from partition_groups(context, split, keys_of, label, level + 1)
    finally:
        memory.release_all()
        for side in sides:
            _delete(side)


def _split(context: OperatorContext, runs: Sequence[SpillRun | None],
           keys_of: Sequence[KeysOf], label: str, level: int
           ) -> list[list[SpillRun | None]] | None:
    """Every side's run re-partitioned with the salt of ``level``; None when that cannot
    make the partition smaller (one key, or the deepest level reached)."""
    rows = sum(run.rows for run in runs if run is not None)
    if level > MAX_LEVEL:
        return None
    split: list[list[SpillRun | None]] = []
    for run, keys in zip(runs, keys_of):
        if run is None:
            split.append([None] * PARTITIONS)
            continue
        spill = PartitionSpill(context, run.schema, label, keys, level)
        for batch in run.read():
            spill.write(batch)
        split.append(spill.finish())
    largest = max(sum(_rows(side[i]) for side in split) for i in range(PARTITIONS))
    if largest == rows:  # one key (or keys no hash tells apart): splitting cannot help
        for side in split:
            _delete(side)
        return None
    return split


def _one_key_message(context: OperatorContext, runs: Sequence[SpillRun | None],
                     keys_of: Sequence[KeysOf]) -> str:
    for run, keys in zip(runs, keys_of):
        if run is None:
            continue
        first = next(run.read())
        key = tuple(k[0].as_py() for k in keys(first.slice(0, 1)))
        size = sum(r.nbytes for r in runs if r is not None)
        return (f"{context.name}: the rows of key {key!r} ({size / 2**20:.1f} MiB) need more "
                "memory than execution.memory-budget allows and cannot be split further; "
                "raise the budget with SET 'execution.memory-budget' = '...'")
    return f"{context.name}: a partition cannot be split to fit execution.memory-budget"


def _rows(run: SpillRun | None) -> int:
    return 0 if run is None else run.rows


def _delete(runs: Sequence[SpillRun | None]) -> None:
    for run in runs:
        if run is not None:
            run.delete()
