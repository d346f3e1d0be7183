"""A task's access to checkpoint storage: persisting its operators' snapshots and reading
the state a restored task starts from.

The deployment tells a task where checkpoints go and which snapshot to restore as a
small JSON object, never as code: the checkpoint directory, the job id checkpoints are
written under, the attempt number, and optionally ``restore``: the completed snapshot
directory to restore from -- a ``<dir>/<job id>/chk-<n>`` (a restarted job restores its
own latest checkpoint; ``execution.savepoint.path`` may name another job's) or a savepoint
directory. Its ``_metadata`` says which: the files of a savepoint (``kind`` savepoint) are
named relative to its own directory, those of a checkpoint relative to its job directory.

A savepoint is written by the same tasks at the same barrier as a checkpoint, but always
as Arrow IPC files per state into the savepoint's directory (``persist`` with
``savepoint_dir``), whatever the backend: the backend's own files and its incremental
bookkeeping are not touched by it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from flowsql.errors import ExecutionError, FlowSQLError
from flowsql.runtime.checkpoint import paths
from flowsql.runtime.checkpoint.config import CheckpointSettings
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, SubtaskState
from flowsql.runtime.checkpoint.savepoint_storage import SavepointStorage
from flowsql.runtime.checkpoint.storage import CheckpointStorage, read_metadata_file, resolve


@dataclass(frozen=True)
class RestoreSource:
    """A completed snapshot directory: ``<dir>/<job id>/chk-<n>`` or a savepoint's (a local
    absolute path or a URI)."""

    directory: str

    def to_dict(self) -> dict[str, Any]:
        return {"directory": self.directory}

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> RestoreSource:
        return cls(str(document["directory"]))

    @classmethod
    def checkpoint(cls, directory: str, job_id: str, checkpoint_id: int) -> RestoreSource:
        """Checkpoint ``checkpoint_id`` of job ``job_id`` under the checkpoint directory
        ``directory`` (a path or a URI, whose query part stays at the end)."""
        location, _, query = directory.partition("?")
        if "://" not in location:
            location = os.path.abspath(location)
        path = paths.join(location, paths.file_safe(job_id),
                          paths.checkpoint_dir_name(checkpoint_id))
        return cls(f"{path}?{query}" if query else path)

    def open(self) -> tuple[CheckpointStorage, CheckpointMetadata]:
        """The storage the metadata's paths resolve in, and the metadata; an
        ``ExecutionError`` when the directory holds no completed snapshot."""
        try:
            filesystem, directory = resolve(self.directory)
            directory = directory.rstrip("/") or "/"
            metadata = read_metadata_file(filesystem, paths.join(directory,
                                                                 paths.METADATA_FILE))
        except (OSError, ValueError, FlowSQLError) as error:
            raise ExecutionError(f"'{self.directory}' is not a completed checkpoint or "
                                 f"savepoint: {error}") from None
        if metadata.kind == "savepoint":
            return SavepointStorage(filesystem, directory, metadata.job_id,
                                    self.directory), metadata
        job_path, name = paths.parent(directory)
        if paths.checkpoint_id_of(name) != metadata.checkpoint_id:
            raise ExecutionError(f"'{self.directory}' holds the metadata of checkpoint "
                                 f"{metadata.checkpoint_id}: a checkpoint is read from its "
                                 "chk-<n> directory inside its job directory")
        base, _ = paths.parent(job_path)
        return CheckpointStorage(filesystem, base, metadata.job_id, root=job_path), metadata


class TaskState:
    """One task's writer and reader of checkpoints (one backend per operator)."""

    def __init__(self, settings: CheckpointSettings, job_id: str, subtask: int) -> None:
        self.settings = settings
        self.subtask = subtask
        self.storage = CheckpointStorage.from_uri(settings.directory, job_id)
        self._backends: dict[str, Any] = {}
        self._savepoints: dict[str, SavepointStorage] = {}

    def persist(self, checkpoint_id: int, operator_id: str, tables: Mapping[str, pa.Table],
                savepoint_dir: str | None = None) -> SubtaskState:
        """Write one operator's snapshot; the handles go into the acknowledgement. With
        ``savepoint_dir`` (checkpoint ``checkpoint_id`` is a savepoint) the files go there,
        one Arrow IPC file per state, and the backend is not involved."""
        if not tables:  # a stateless operator: nothing to write, whatever the backend
            return SubtaskState(self.subtask)
        if savepoint_dir is not None:
            from flowsql.runtime.checkpoint.backends.hashmap import HashMapSnapshotBackend

            storage = self._savepoints.get(savepoint_dir)
            if storage is None:  # one per savepoint: a URI resolves to a new file system
                storage = self._savepoints[savepoint_dir] = SavepointStorage.at(
                    savepoint_dir, self.storage.job_id)
            return HashMapSnapshotBackend(storage, operator_id, self.subtask).write(
                checkpoint_id, tables)
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

    storage, metadata = source.open()
    held = {op.operator_id for op in metadata.operators}
    return {operator_id: restore_tables(storage, metadata, operator_id, subtask, parallelism,
                                        local_dir=local_dir)
            for operator_id in operator_ids if operator_id in held}


def read_restore_metadata(source: RestoreSource) -> CheckpointMetadata:
    return source.open()[1]

