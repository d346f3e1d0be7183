"""A task's access to checkpoint storage: persisting its operators' snapshots and reading
the state a restored task starts from.

The deployment tells a task where checkpoints go and which checkpoint to restore as a
small JSON object (``CheckpointTarget``), never as code: the checkpoint directory, the job
id checkpoints are written under, the attempt number, and optionally ``restore``: the
directory, job id and checkpoint id to restore from (a restarted job restores its own
latest checkpoint; a job started with ``execution.savepoint.path`` restores another job's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from flowsql.runtime.checkpoint.config import CheckpointSettings
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, SubtaskState
from flowsql.runtime.checkpoint.storage import CheckpointStorage


@dataclass(frozen=True)
class RestoreSource:
    """Checkpoint ``checkpoint_id`` of job ``job_id`` under ``directory``."""

    directory: str
    job_id: str
    checkpoint_id: int

    def to_dict(self) -> dict[str, Any]:
        return {"directory": self.directory, "job_id": self.job_id,
                "checkpoint_id": self.checkpoint_id}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> RestoreSource:
        return cls(str(document["directory"]), str(document["job_id"]),
                   int(document["checkpoint_id"]))


class TaskState:
    """One task's writer and reader of checkpoints (one backend per operator)."""

    def __init__(self, settings: CheckpointSettings, job_id: str, subtask: int) -> None:
        self.settings = settings
        self.subtask = subtask
        self.storage = CheckpointStorage.from_uri(settings.directory, job_id)
        self._backends: dict[str, Any] = {}

    def persist(self, checkpoint_id: int, operator_id: str,
                tables: Mapping[str, pa.Table]) -> SubtaskState:
        """Write one operator's snapshot; the handles go into the acknowledgement."""
        if not tables:  # a stateless operator: nothing to write, whatever the backend
            return SubtaskState(self.subtask)
        backend = self._backends.get(operator_id)
        if backend is None:
            from flowsql.runtime.checkpoint.backends import snapshot_backend

            backend = self._backends[operator_id] = snapshot_backend(
                self.settings.backend, self.storage, operator_id, self.subtask,
                incremental=self.settings.incremental, local_dir=self.settings.rocksdb_dir)
        return backend.write(checkpoint_id, tables)  # type: ignore[no-any-return]

    def close(self) -> None:
        for backend in self._backends.values():
            backend.close()
        self._backends.clear()


def restore_states(source: RestoreSource, operator_ids: Sequence[str], subtask: int,
                   parallelism: int, local_dir: str | None = None
                   ) -> dict[str, dict[str, pa.Table]]:
    """The state tables of every operator in ``operator_ids`` that the checkpoint holds
    (an operator it does not hold starts empty)."""
    from flowsql.runtime.checkpoint.backends import restore_tables

    storage = CheckpointStorage.from_uri(source.directory, source.job_id)
    metadata = storage.read_metadata(source.checkpoint_id)
    held = {op.operator_id for op in metadata.operators}
    return {operator_id: restore_tables(storage, metadata, operator_id, subtask, parallelism,
                                        local_dir=local_dir)
            for operator_id in operator_ids if operator_id in held}


def read_restore_metadata(source: RestoreSource) -> CheckpointMetadata:
    return CheckpointStorage.from_uri(source.directory, source.job_id).read_metadata(
        source.checkpoint_id)
