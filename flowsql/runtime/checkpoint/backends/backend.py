"""What a task persists one operator subtask's snapshots with, and how it gets one.

``state.backend.type`` chooses the backend (Flink's names): ``hashmap`` writes every state
table whole at every checkpoint; ``rocksdb`` mirrors the state into a local RocksDB and
uploads RocksDB checkpoints, incrementally with ``execution.checkpointing.incremental``.
Either way the live state of an operator is its ``StateStore`` (Arrow tables in memory);
the backend only decides what a checkpoint writes. ``restore.restore_tables`` reads what
either wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import pyarrow as pa

from flowsql.errors import ConfigError
from flowsql.runtime.checkpoint.backends.hashmap import HashMapSnapshotBackend
from flowsql.runtime.checkpoint.backends.rocksdb import RocksDBSnapshotBackend
from flowsql.runtime.checkpoint.metadata import SubtaskState
from flowsql.runtime.checkpoint.storage import CheckpointStorage

#: the values of ``state.backend.type``
BACKEND_KINDS = ("hashmap", "rocksdb")


class SnapshotBackend(Protocol):
    """Persists the snapshots of one (operator id, subtask).

    Call order: any number of ``write`` calls, one at a time (from the task's background
    upload thread) and with increasing checkpoint ids, then ``close`` once, after the last
    ``write`` returned. A backend may keep what it wrote before (the rocksdb backend writes
    only changes), so a failed ``write`` must not be retried with an older id."""

    def write(self, checkpoint_id: int, tables: Mapping[str, pa.Table]) -> SubtaskState:
        """Persist ``tables`` (a ``StateStore.snapshot()``, not modified afterwards) as this
        subtask's part of checkpoint ``checkpoint_id``; the returned state (its files and
        the shared files it references; no source position) is the acknowledgement."""
        ...

    def close(self) -> None:
        """Release local resources (a RocksDB handle, a local directory)."""
        ...


def snapshot_backend(kind: str, storage: CheckpointStorage, operator_id: str, subtask: int,
                     *, incremental: bool = False,
                     local_dir: str | None = None) -> SnapshotBackend:
    """The backend ``state.backend.type`` names for one subtask. ``incremental`` and
    ``local_dir`` (``state.backend.rocksdb.localdir``) matter to ``rocksdb`` only, as in
    Flink, where the hashmap backend ignores incremental checkpointing."""
    if kind == "hashmap":
        return HashMapSnapshotBackend(storage, operator_id, subtask)
    if kind == "rocksdb":
        return RocksDBSnapshotBackend(storage, operator_id, subtask, incremental=incremental,
                                      local_dir=local_dir)
    raise ConfigError(f"unknown state backend {kind!r}; expected one of "
                      f"{', '.join(BACKEND_KINDS)}")
