"""The rocksdb backend's snapshots: a local RocksDB mirror of the state, uploaded as a RocksDB
checkpoint, optionally incrementally (shared, immutable SST files).

The live operator state stays Arrow tables in memory (``StateStore``); this backend is about
what a checkpoint writes. Each backend instance owns one RocksDB instance (raw bytes mode:
no Python object is ever pickled) in
``<local dir>/<job id>/<operator id>/<subtask>-<instance id>/db``. A ``write``:

1. turns every state table into entries (``entries``: one Arrow IPC message per key
   group, plus the schema) and writes only the entries whose bytes changed since the
   previous ``write`` (a 128-bit BLAKE2b digest per key is kept in memory), deleting the
   entries that disappeared. The database then holds exactly the entries of ``tables``;
2. takes a RocksDB checkpoint (a consistent set of the database's files, the SST files
   hard-linked) into a temporary local directory;
3. uploads it. Full (``incremental=False``): every file into the subtask's directory of
   ``chk-<n>``. Incremental: every ``*.sst`` file (immutable once written; RocksDB never
   reuses a file number) to ``shared/<instance id>-<file name>``, once per instance; the
   small files describing which SST files make the database (``CURRENT``, ``MANIFEST-*``,
   ``OPTIONS-*``, the write-ahead log, rocksdict's configuration) into ``chk-<n>``.

The acknowledgement (``SubtaskState``) names each ``chk-<n>`` file with state
``rocksdb/<file name>`` -- the marker by which a restore tells this format from the
hashmap backend's -- and lists in ``shared_files`` every shared file the checkpoint needs,
so retention's reference counting keeps them as long as a retained checkpoint does.

Why an SST file needs uploading only once: a shared file is deleted only when no retained
checkpoint references it, and every checkpoint taken while an SST file is live references
it, so a file this instance still uses is never deleted under it. A restored job runs new
instances, which upload their first checkpoint in full.

A write still serializes and hashes the whole state (the state lives in memory as Arrow
tables); what the database saves is upload volume: with ``incremental=True`` a checkpoint
uploads the SST files written since the previous one (the changed key groups, and what
RocksDB's compactions rewrote), not the whole state.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from typing import cast

import pyarrow as pa
from rocksdict import (
    AccessType,
    Checkpoint,
    DBCompressionType,
    Options,
    Rdict,
    WriteBatch,
    WriteOptions,
)

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint import paths
from flowsql.runtime.checkpoint.backends.entries import table_entries, tables_from_entries
from flowsql.runtime.checkpoint.metadata import StateFileHandle, SubtaskState
from flowsql.runtime.checkpoint.storage import CheckpointStorage

#: the state name of every file a rocksdb snapshot puts into ``chk-<n>`` starts with this
FILE_STATE_PREFIX = "rocksdb/"
#: where instances live without ``state.backend.rocksdb.localdir`` (as ``CheckpointSettings``)
DEFAULT_LOCAL_DIR = os.path.join(tempfile.gettempdir(), "flowsql-rocksdb")
_SHARED_NAME = re.compile(r"[0-9a-f]{32}-([0-9]+\.sst)")
_DIGEST_BYTES = 16


def is_rocksdb_snapshot(state: SubtaskState) -> bool:
    """Whether a subtask's acknowledged files were written by this backend."""
    return any(f.state.startswith(FILE_STATE_PREFIX) for f in state.files)


class RocksDBSnapshotBackend:
    """Snapshots of one (operator, subtask) through a local RocksDB; see the module docstring.

    ``write`` calls come one at a time (from the task's upload thread) with increasing
    checkpoint ids; ``close`` comes after the last one and deletes the local instance."""

    def __init__(self, storage: CheckpointStorage, operator_id: str, subtask: int, *,
                 incremental: bool = False, local_dir: str | None = None) -> None:
        self.storage = storage
        self.operator_id = operator_id
        self.subtask = subtask
        self.incremental = incremental
        self.instance_id = uuid.uuid4().hex
        self.directory = _instance_dir(local_dir, storage.job_id, operator_id,
                                       f"{subtask}-{self.instance_id}")
        os.makedirs(self.directory)
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_compression_type(DBCompressionType.zstd())
        self._db: Rdict | None = Rdict(os.path.join(self.directory, "db"), options)
        # every write is followed by a checkpoint, which flushes the memtable to an SST
        # file: a write-ahead log would only be written twice
        write_options = WriteOptions()
        # a property at run time; the package's type stubs declare a method
        write_options.disable_wal = True  # type: ignore[method-assign,assignment]
        self._db.set_write_options(write_options)
        self._digests: dict[bytes, bytes] = {}
        #: SST file name -> its shared path, for the files this instance uploaded and the
        #: database still uses
        self._shared: dict[str, str] = {}

    def write(self, checkpoint_id: int, tables: Mapping[str, pa.Table]) -> SubtaskState:
        if self._db is None:
            raise ExecutionError(f"the state backend of '{self.operator_id}' subtask "
                                 f"{self.subtask} is closed")
        self._apply(self._db, tables)
        local = os.path.join(self.directory, f"chk-{checkpoint_id}")
        try:
            Checkpoint(self._db).create_checkpoint(local)
            return self._upload(checkpoint_id, local)
        finally:
            shutil.rmtree(local, ignore_errors=True)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def _apply(self, db: Rdict, tables: Mapping[str, pa.Table]) -> None:
        """Make the database hold exactly the entries of ``tables``, writing only changes."""
        digests: dict[bytes, bytes] = {}
        batch = WriteBatch(raw_mode=True)
        for name in sorted(tables):
            for key, value in table_entries(name, tables[name]):
                digest = hashlib.blake2b(value, digest_size=_DIGEST_BYTES).digest()
                digests[key] = digest
                if self._digests.get(key) != digest:
                    batch.put(key, value.to_pybytes())
        for key in self._digests.keys() - digests.keys():
            batch.delete(key)
        if len(batch):
            db.write(batch)
        self._digests = digests

    def _upload(self, checkpoint_id: int, local: str) -> SubtaskState:
        files: list[StateFileHandle] = []
        shared: dict[str, str] = {}
        for name in sorted(os.listdir(local)):
            path = os.path.join(local, name)
            if self.incremental and name.endswith(".sst"):
                reference = self._shared.get(name)
                if reference is None:
                    reference = self.storage.upload_shared(f"{self.instance_id}-{name}", path)
                shared[name] = reference
                continue
            relative, size = self.storage.upload_private(
                checkpoint_id, self.operator_id, self.subtask, name, path)
            files.append(StateFileHandle(FILE_STATE_PREFIX + name, relative, size, 0))
        # SST files the database dropped (compacted away) never come back: forget them
        self._shared = shared
        return SubtaskState(self.subtask, tuple(files), tuple(sorted(shared.values())))


def read_rocksdb_snapshot(storage: CheckpointStorage, operator_id: str, state: SubtaskState,
                          local_dir: str | None = None) -> dict[str, pa.Table]:
    """The tables one subtask's rocksdb snapshot holds: its files are downloaded into a
    fresh local directory, the database opened read-only and read in key order, and the
    directory deleted again. Tables equal those written (schema and state metadata
    included), rows ordered by key group (``entries``)."""
    directory = _instance_dir(local_dir, storage.job_id, operator_id,
                              f"restore-{state.subtask}-{uuid.uuid4().hex}")
    os.makedirs(directory)
    try:
        for handle in state.files:
            name = _plain_name(handle.state.removeprefix(FILE_STATE_PREFIX))
            storage.download(handle.path, os.path.join(directory, name))
        for reference in state.shared_files:
            storage.download(reference, os.path.join(directory, _sst_name(reference)))
        db = Rdict(directory, Options(raw_mode=True), access_type=AccessType.read_only())
        try:
            # raw mode: keys and values are bytes
            return tables_from_entries(cast("Iterable[tuple[bytes, bytes]]", db.items()))
        finally:
            db.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _instance_dir(local_dir: str | None, job_id: str, operator_id: str, leaf: str) -> str:
    return os.path.join(local_dir or DEFAULT_LOCAL_DIR, paths.file_safe(job_id),
                        paths.file_safe(operator_id), leaf)


def _sst_name(reference: str) -> str:
    """The local SST file name of a shared file this backend uploaded."""
    match = _SHARED_NAME.fullmatch(paths.from_file_safe(reference.rsplit("/", 1)[-1]))
    if match is None:
        raise ExecutionError(f"shared file {reference} is not an SST file of a rocksdb "
                             f"snapshot")
    return match.group(1)


def _plain_name(name: str) -> str:
    """A file name from the metadata, refused unless it stays inside the directory."""
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise ExecutionError(f"rocksdb snapshot file name {name!r} is not a plain file name")
    return name
