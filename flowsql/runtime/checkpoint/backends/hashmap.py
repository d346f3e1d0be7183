"""The hashmap backend's snapshots: one Arrow IPC file per state table, every checkpoint.

Flink's ``hashmap`` state backend keeps state on the heap and writes it out whole at every
checkpoint; so does this one. Nothing is kept between checkpoints, nothing is shared between
them, and a checkpoint's files are exactly ``CheckpointStorage.write_state``'s.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa

from flowsql.runtime.checkpoint.metadata import SubtaskState
from flowsql.runtime.checkpoint.storage import CheckpointStorage


class HashMapSnapshotBackend:
    """Full snapshots of one (operator, subtask) through ``CheckpointStorage.write_state``."""

    def __init__(self, storage: CheckpointStorage, operator_id: str, subtask: int) -> None:
        self.storage = storage
        self.operator_id = operator_id
        self.subtask = subtask

    def write(self, checkpoint_id: int, tables: Mapping[str, pa.Table]) -> SubtaskState:
        files = self.storage.write_state(checkpoint_id, self.operator_id, self.subtask, tables)
        return SubtaskState(self.subtask, files)

    def close(self) -> None:
        """Nothing local to release."""
