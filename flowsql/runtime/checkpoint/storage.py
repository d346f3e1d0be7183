"""Checkpoint storage: the I/O edge, over any ``pyarrow.fs`` file system.

A thin shell around the pure layout (``paths``), document (``metadata``) and retention
(``retention``) modules. Tasks write their state files (``write_state``, ``write_shared``)
while the checkpoint runs; the coordinator writes ``_metadata`` with ``commit`` once every
subtask acknowledged, then applies retention. A state backend that keeps its own file format
(RocksDB) uploads local files instead (``upload_private``, ``upload_shared``) and reads them
back with ``download``. Readers find the newest completed checkpoint
with ``latest_completed`` and read tables back with ``restore_tables``.

Contract:

* a state table is one Arrow IPC file (zstd-compressed buffers); its schema metadata (the
  state description of ``flowsql.runtime.state.metadata``) travels with it, so a table
  reads back equal to what was written, metadata included. Never serialized Python objects;
* ``commit`` writes ``_metadata`` last and atomically: on a file system with an atomic
  rename (local, HDFS) to a temporary name in the same directory, then moved into place; on
  an object store (S3, GCS, Azure) with one upload, which becomes visible whole or not at
  all. A reader therefore never sees a partial ``_metadata``, and a crash before the commit
  leaves an incomplete ``chk-<n>`` that is never restored and later deleted;
* a completed checkpoint is immutable: committing the same id twice is an error;
* deleting a checkpoint removes its ``_metadata`` first, so a crash half way through leaves
  an incomplete directory (garbage by the retention rules), never a completed checkpoint
  with missing files.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable, Mapping

import pyarrow as pa
import pyarrow.fs as pafs

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint import paths
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, StateFileHandle
from flowsql.runtime.checkpoint.retention import (
    RetentionPlan,
    latest_completed,
    plan_retention,
    shared_files_to_delete,
)
from flowsql.runtime.state.store import is_union_list, merge_snapshots, with_union_lists

#: file systems whose single upload is atomic and whose directories are only key prefixes
_OBJECT_STORES = frozenset({"s3", "gcs", "abfs"})
_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")
_COPY_CHUNK = 1 << 20


class CheckpointStorage:
    """The checkpoints of one job under one checkpoint directory."""

    def __init__(self, filesystem: pafs.FileSystem, base_path: str, job_id: str, *,
                 root: str | None = None) -> None:
        """``root`` overrides the job directory as the directory the metadata's paths are
        relative to (a ``chk-<n>`` directory's parent found elsewhere, a savepoint)."""
        self.filesystem = filesystem
        self.base_path = base_path
        self.job_id = job_id
        self.job_path = paths.job_dir(base_path, job_id) if root is None else root
        self._object_store = filesystem.type_name in _OBJECT_STORES

    @classmethod
    def from_uri(cls, location: str, job_id: str,
                 filesystem: pafs.FileSystem | None = None) -> CheckpointStorage:
        """Storage at ``location``: a local path, or a URI ``pyarrow.fs.FileSystem.from_uri``
        resolves (``file:///...``, ``s3://bucket/prefix``). With ``filesystem`` given (e.g.
        an ``S3FileSystem`` with an endpoint override) only the URI's path part is used."""
        resolved, path = resolve(location, filesystem)
        return cls(resolved, path, job_id)

    # -- writing (tasks) ---------------------------------------------------------------------

    def write_state(self, checkpoint_id: int, operator_id: str, subtask: int,
                    tables: Mapping[str, pa.Table]) -> tuple[StateFileHandle, ...]:
        """Write one subtask's snapshot (``StateStore.snapshot()``): one Arrow IPC file per
        state; the returned handles go into the subtask's acknowledgement."""
        handles = []
        for state_name in sorted(tables):
            table = tables[state_name]
            relative = paths.state_file(checkpoint_id, operator_id, subtask, state_name)
            size = self._write_table(self._absolute(relative), table)
            handles.append(StateFileHandle(state_name, relative, size, table.num_rows))
        return tuple(handles)

    def write_shared(self, name: str, data: bytes) -> str:
        """Write a file several checkpoints may reference (its name should identify its
        content); an existing file of that name is kept. Returns the path to reference."""
        relative = paths.shared_file(name)
        target = self._absolute(relative)
        if self.filesystem.get_file_info(target).type == pafs.FileType.NotFound:
            self._write_bytes(target, data)
        return relative

    def upload_private(self, checkpoint_id: int, operator_id: str, subtask: int,
                       file_name: str, local_path: str) -> tuple[str, int]:
        """Copy a local file (streamed, never whole in memory) into the subtask's directory
        of checkpoint ``checkpoint_id`` under ``file_name``; returns the path to name in the
        acknowledgement and the size. The file is deleted with the checkpoint."""
        relative = paths.subtask_file(checkpoint_id, operator_id, subtask, file_name)
        return relative, self._copy_in(local_path, self._absolute(relative))

    def upload_shared(self, name: str, local_path: str) -> str:
        """``write_shared`` of a local file's content, streamed."""
        relative = paths.shared_file(name)
        target = self._absolute(relative)
        if self.filesystem.get_file_info(target).type == pafs.FileType.NotFound:
            self._copy_in(local_path, target)
        return relative

    def commit(self, metadata: CheckpointMetadata) -> None:
        """Write ``_metadata``, the commit marker; see the module contract."""
        if metadata.job_id != self.job_id:
            raise ExecutionError(f"metadata of job '{metadata.job_id}' cannot complete a "
                                 f"checkpoint of job '{self.job_id}'")
        self._write_marker(self._absolute(paths.metadata_file(metadata.checkpoint_id)),
                           metadata)

    def _write_marker(self, target: str, metadata: CheckpointMetadata) -> None:
        if self.filesystem.get_file_info(target).type != pafs.FileType.NotFound:
            raise ExecutionError(f"checkpoint {metadata.checkpoint_id} is already completed")
        document = metadata.to_json()
        if self._object_store:
            self._write_bytes(target, document)
            return
        temporary = f"{target}.inprogress-{uuid.uuid4().hex}"
        self._write_bytes(temporary, document)
        self.filesystem.move(temporary, target)

    # -- reading (recovery) ------------------------------------------------------------------

    def list_checkpoints(self) -> tuple[paths.CheckpointDirectory, ...]:
        """The ``chk-<n>`` directories of the job, each marked completed or not."""
        selector = pafs.FileSelector(self.job_path, allow_not_found=True)
        names = [info.base_name for info in self.filesystem.get_file_info(selector)
                 if info.type == pafs.FileType.Directory]
        ids = [n for n in (paths.checkpoint_id_of(name) for name in names) if n is not None]
        markers = self.filesystem.get_file_info(
            [self._absolute(paths.metadata_file(n)) for n in ids])
        entries = [paths.checkpoint_dir_name(n) for n in ids]
        entries += [paths.metadata_file(n) for n, info in zip(ids, markers)
                    if info.type == pafs.FileType.File]
        return paths.parse_listing(entries)

    def read_metadata(self, checkpoint_id: int) -> CheckpointMetadata:
        target = self._absolute(paths.metadata_file(checkpoint_id))
        metadata = read_metadata_file(self.filesystem, target)
        if metadata.checkpoint_id != checkpoint_id or metadata.job_id != self.job_id:
            raise ExecutionError(f"{target} describes checkpoint {metadata.checkpoint_id} of "
                                 f"job '{metadata.job_id}'")
        return metadata

    def latest_completed(self) -> CheckpointMetadata | None:
        """The metadata of the newest completed checkpoint, None when there is none."""
        newest = latest_completed(self.list_checkpoints())
        return None if newest is None else self.read_metadata(newest)

    def read_tables(self, metadata: CheckpointMetadata, operator_id: str,
                    subtask: int) -> dict[str, pa.Table]:
        """The snapshot one old subtask wrote, as ``StateStore.snapshot()`` returned it."""
        state = next((s for s in metadata.operator(operator_id).subtasks
                      if s.subtask == subtask), None)
        if state is None:
            raise ExecutionError(f"checkpoint {metadata.checkpoint_id} holds no subtask "
                                 f"{subtask} of operator '{operator_id}'")
        return {f.state: self._read_table(self._absolute(f.path)) for f in state.files}

    def read_schema(self, relative: str) -> pa.Schema:
        """The schema (state metadata included) of one state file, without its data."""
        with self.filesystem.open_input_file(self._absolute(relative)) as source:
            return pa.ipc.open_file(source).schema

    def file_sizes(self, relatives: Iterable[str]) -> dict[str, int]:
        """Bytes of each of the job's files (paths relative to the job directory); a
        missing file counts 0."""
        names = list(relatives)
        infos = self.filesystem.get_file_info([self._absolute(n) for n in names])
        return {n: (info.size or 0) if info.type == pafs.FileType.File else 0
                for n, info in zip(names, infos)}

    def download(self, relative: str, local_path: str) -> None:
        """Copy a file of the job directory (a path the metadata names) to a local file."""
        with self.filesystem.open_input_stream(self._absolute(relative)) as source, \
                open(local_path, "wb") as sink:
            shutil.copyfileobj(source, sink, _COPY_CHUNK)

    def restore_tables(self, metadata: CheckpointMetadata, operator_id: str, subtask: int,
                       parallelism: int) -> dict[str, pa.Table]:
        """What ``StateStore.restore`` of new subtask ``subtask`` of ``parallelism`` needs.

        With the parallelism of the snapshot, the subtask's own files (each list-state entry
        stays where it was); with another parallelism, every old subtask's tables
        concatenated in subtask order (``merge_snapshots``), from which the store keeps its
        key groups and its share of list state."""
        operator = metadata.operator(operator_id)
        if not 0 <= subtask < parallelism:
            raise ExecutionError(f"subtask {subtask} is outside parallelism {parallelism}")
        if parallelism == operator.parallelism:
            own = self.read_tables(metadata, operator_id, subtask)
            return with_union_lists(own, [own if old == subtask else
                                          self.read_tables(metadata, operator_id, old)
                                          for old in range(operator.parallelism)]
                                    if any(is_union_list(t) for t in own.values()) else [])
        return merge_snapshots([self.read_tables(metadata, operator_id, old)
                                for old in range(operator.parallelism)])

    # -- cleanup (coordinator) ---------------------------------------------------------------

    def discard(self, checkpoint_id: int) -> None:
        """Delete one checkpoint directory, ``_metadata`` first; a missing one is fine."""
        directory = self._absolute(paths.checkpoint_dir_name(checkpoint_id))
        marker = self._absolute(paths.metadata_file(checkpoint_id))
        if self.filesystem.get_file_info(marker).type == pafs.FileType.File:
            self.filesystem.delete_file(marker)
        if self.filesystem.get_file_info(directory).type != pafs.FileType.NotFound:
            self.filesystem.delete_dir(directory)

    def apply_retention(self, num_retained: int,
                        in_progress: Mapping[int, Iterable[str]] | None = None
                        ) -> RetentionPlan:
        """Delete what ``retention.plan_retention`` says, then the shared files no retained
        checkpoint references. ``in_progress`` maps running checkpoints to the shared files
        their acknowledgements reference so far."""
        running = dict(in_progress or {})
        listing = self.list_checkpoints()
        plan = plan_retention(listing, num_retained, running)
        completed = {d.checkpoint_id for d in listing if d.completed}
        discarded = [self.read_metadata(n).shared_files for n in plan.deleted if n in completed]
        retained = [self.read_metadata(n).shared_files for n in plan.retained]
        for checkpoint_id in plan.deleted:
            self.discard(checkpoint_id)
        garbage = shared_files_to_delete(discarded, retained,
                                         {name for files in running.values() for name in files})
        for relative in sorted(garbage):
            target = self._absolute(relative)
            if self.filesystem.get_file_info(target).type == pafs.FileType.File:
                self.filesystem.delete_file(target)
        return plan

    # -- file access -------------------------------------------------------------------------

    def _absolute(self, relative: str) -> str:
        return paths.join(self.job_path, relative)

    def _prepare_parent(self, target: str) -> None:
        if not self._object_store:
            self.filesystem.create_dir(target.rsplit("/", 1)[0], recursive=True)

    def _write_table(self, target: str, table: pa.Table) -> int:
        self._prepare_parent(target)
        with self.filesystem.open_output_stream(target) as sink:
            with pa.ipc.new_file(sink, table.schema, options=_IPC_OPTIONS) as writer:
                writer.write_table(table)
            return int(sink.tell())

    def _write_bytes(self, target: str, data: bytes) -> None:
        self._prepare_parent(target)
        with self.filesystem.open_output_stream(target) as sink:
            sink.write(data)

    def _copy_in(self, local_path: str, target: str) -> int:
        self._prepare_parent(target)
        with open(local_path, "rb") as source, \
                self.filesystem.open_output_stream(target) as sink:
            shutil.copyfileobj(source, sink, _COPY_CHUNK)
            return int(sink.tell())

    def _read_table(self, target: str) -> pa.Table:
        with self.filesystem.open_input_file(target) as source:
            return pa.ipc.open_file(source).read_all()


def resolve(location: str, filesystem: pafs.FileSystem | None = None
            ) -> tuple[pafs.FileSystem, str]:
    """The file system and path of ``location`` (see ``CheckpointStorage.from_uri``)."""
    if "://" not in location:
        return filesystem or pafs.LocalFileSystem(), os.path.abspath(location)
    if filesystem is not None:
        return filesystem, location.split("://", 1)[1].split("?", 1)[0]
    resolved, path = pafs.FileSystem.from_uri(location)
    return resolved, path


def read_metadata_file(filesystem: pafs.FileSystem, target: str) -> CheckpointMetadata:
    with filesystem.open_input_stream(target) as stream:
        return CheckpointMetadata.from_json(stream.read())
