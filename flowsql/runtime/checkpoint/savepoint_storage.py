"""A savepoint's directory: the canonical, self-contained snapshot a user takes.

Layout (``paths``)::

    <savepoint dir>/savepoint-<short job id>-<random>/_metadata
    <savepoint dir>/savepoint-<short job id>-<random>/<operator id>/<subtask>/<state>.arrow

Contract:

* every state table is one Arrow IPC file, as the hashmap backend writes it, whatever
  ``state.backend.type`` and ``execution.checkpointing.incremental`` say: a savepoint
  references no shared file and no backend-private format, so any backend restores it;
* the ``_metadata`` document (``kind`` = ``savepoint``) names its files relative to the
  savepoint directory, so the directory can be copied or moved as a whole;
* ``_metadata`` is written last and atomically, as a checkpoint's (``CheckpointStorage``):
  a directory without it is not a savepoint;
* checkpoint retention never looks here: a savepoint lives until its owner deletes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.fs as pafs

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint import paths
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, StateFileHandle
from flowsql.runtime.checkpoint.storage import CheckpointStorage, resolve

KIND = "savepoint"


class SavepointStorage(CheckpointStorage):
    """One savepoint directory of job ``job_id`` (see the module docstring)."""

    def __init__(self, filesystem: pafs.FileSystem, directory: str, job_id: str,
                 location: str) -> None:
        base, _ = paths.parent(directory)
        super().__init__(filesystem, base, job_id, root=directory)
        #: the directory as the user names it (a local path or a URI)
        self.location = location

    @classmethod
    def create(cls, base_location: str, job_id: str) -> SavepointStorage:
        """A new, not yet existing savepoint directory under ``base_location``
        (``execution.checkpointing.savepoint-dir`` or the one a stop names)."""
        filesystem, base = resolve(base_location)
        name = paths.savepoint_dir_name(job_id, uuid.uuid4().hex[:12])
        return cls(filesystem, paths.join(base, name), job_id,
                   _child_location(base_location, base, name))

    @classmethod
    def at(cls, location: str, job_id: str) -> SavepointStorage:
        """The savepoint directory ``location`` (as ``location`` of ``create`` gave it)."""
        filesystem, directory = resolve(location)
        return cls(filesystem, directory.rstrip("/") or "/", job_id, location)

    def write_state(self, checkpoint_id: int, operator_id: str, subtask: int,
                    tables: Mapping[str, pa.Table]) -> tuple[StateFileHandle, ...]:
        """One subtask's snapshot, one Arrow IPC file per state (``checkpoint_id`` is not
        part of any path: a savepoint directory holds one snapshot)."""
        handles = []
        for state_name in sorted(tables):
            table = tables[state_name]
            relative = paths.savepoint_state_file(operator_id, subtask, state_name)
            size = self._write_table(self._absolute(relative), table)
            handles.append(StateFileHandle(state_name, relative, size, table.num_rows))
        return tuple(handles)

    def commit(self, metadata: CheckpointMetadata) -> None:
        """Write ``_metadata`` last and atomically; the savepoint is complete then."""
        if metadata.kind != KIND or metadata.shared_files:
            raise ExecutionError("a savepoint's metadata has kind 'savepoint' and "
                                 "references no shared file")
        if metadata.job_id != self.job_id:
            raise ExecutionError(f"metadata of job '{metadata.job_id}' cannot complete a "
                                 f"savepoint of job '{self.job_id}'")
        self._write_marker(self._absolute(paths.METADATA_FILE), metadata)

    def discard_all(self) -> None:
        """Delete the directory (a savepoint that failed), ``_metadata`` first."""
        marker = self._absolute(paths.METADATA_FILE)
        if self.filesystem.get_file_info(marker).type == pafs.FileType.File:
            self.filesystem.delete_file(marker)
        if self.filesystem.get_file_info(self.job_path).type != pafs.FileType.NotFound:
            self.filesystem.delete_dir(self.job_path)


def _child_location(base_location: str, base_path: str, name: str) -> str:
    """``name`` under ``base_location`` in the user's spelling: a URI stays a URI."""
    if "://" in base_location:
        location, _, query = base_location.partition("?")
        return f"{location.rstrip('/')}/{name}" + (f"?{query}" if query else "")
    return paths.join(base_path, name)
