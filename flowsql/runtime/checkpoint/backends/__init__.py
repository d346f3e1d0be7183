"""State backends: how one operator subtask's snapshot is persisted and read back.

* :mod:`~flowsql.runtime.checkpoint.backends.backend` -- the ``SnapshotBackend`` protocol
  a task writes each snapshot through, and ``snapshot_backend`` choosing one by
  ``state.backend.type``;
* :mod:`~flowsql.runtime.checkpoint.backends.hashmap` -- every state table as an Arrow IPC
  file, every checkpoint;
* :mod:`~flowsql.runtime.checkpoint.backends.rocksdb` -- a local RocksDB mirror written
  per key group, uploaded as RocksDB checkpoints (full, or incremental with shared SST
  files);
* :mod:`~flowsql.runtime.checkpoint.backends.entries` -- state tables as key-value entries
  per key group and back (pure);
* :mod:`~flowsql.runtime.checkpoint.backends.restore` -- ``restore_tables``: the tables a
  ``StateStore.restore`` needs, whichever backend wrote them, also at another parallelism.

The live state of an operator stays its ``StateStore`` (Arrow tables in memory) with
either backend; a backend decides only what a checkpoint writes and uploads.
"""

from flowsql.runtime.checkpoint.backends.backend import (
    BACKEND_KINDS,
    SnapshotBackend,
    snapshot_backend,
)
from flowsql.runtime.checkpoint.backends.restore import restore_tables

__all__ = ["BACKEND_KINDS", "SnapshotBackend", "restore_tables", "snapshot_backend"]
