"""Reading an operator subtask's state back from a completed checkpoint, whichever backend
wrote it.

The backend is told from the subtask's acknowledged files: a rocksdb snapshot names its
files ``rocksdb/<file name>``, a hashmap snapshot names them by state
(``keyed/...``, ``list/...``, ``timers/...``). So a job may switch backends between a
checkpoint and its restore, and old subtasks written by different backends still merge.
"""

from __future__ import annotations

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.backends.rocksdb import (
    is_rocksdb_snapshot,
    read_rocksdb_snapshot,
)
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata
from flowsql.runtime.checkpoint.storage import CheckpointStorage
from flowsql.runtime.state.store import is_union_list, merge_snapshots, with_union_lists


def restore_tables(storage: CheckpointStorage, metadata: CheckpointMetadata, operator_id: str,
                   subtask: int, parallelism: int, *,
                   local_dir: str | None = None) -> dict[str, pa.Table]:
    """What ``StateStore.restore`` of new subtask ``subtask`` of ``parallelism`` needs.

    With the snapshot's parallelism, the old subtask's own tables; with another, every old
    subtask's tables concatenated in subtask order (``merge_snapshots``), from which the
    store keeps its key groups and its share of list state. ``local_dir`` is where a
    rocksdb snapshot is downloaded to (and deleted from) while it is read."""
    operator = metadata.operator(operator_id)
    if not 0 <= subtask < parallelism:
        raise ExecutionError(f"subtask {subtask} is outside parallelism {parallelism}")
    states = {s.subtask: s for s in operator.subtasks}

    def read(old: int) -> dict[str, pa.Table]:
        if is_rocksdb_snapshot(states[old]):
            return read_rocksdb_snapshot(storage, operator_id, states[old], local_dir)
        return storage.read_tables(metadata, operator_id, old)

    if parallelism == operator.parallelism:
        own = read(subtask)
        if not any(is_union_list(table) for table in own.values()):
            return own
        return with_union_lists(own, [own if old == subtask else read(old)
                                      for old in range(operator.parallelism)])
    return merge_snapshots([read(old) for old in range(operator.parallelism)])
