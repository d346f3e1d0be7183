"""The two-phase commit of the ``filesystem`` sink with checkpointing on, as Flink's
``FileSink``: part files are *pending* between a checkpoint's snapshot and its completion.

Lifecycle of one part file (all names in the sink's directory)::

    .part-<job>-<attempt>-<subtask>-<n>.<ext>.inprogress   written, then closed
        -- closed by a roll or by snapshot(c): pending for checkpoint c, listed in state
    part-<job>-<attempt>-<subtask>-<n>.<ext>                committed: renamed on
                                                            checkpoint_complete(>= c)

Contract (why each rule keeps rows exactly once):

* a file becomes pending only at a snapshot, and the snapshot's state lists it: the rows in
  it are exactly rows the sources will not replay after a restore of that checkpoint;
* ``checkpoint_complete(c)`` commits every pending file of checkpoints ``<= c`` (a newer
  checkpoint subsumes an older one whose notification never came);
* ``restore`` commits every pending file of the restored state -- the restored checkpoint
  completed, so its files are part of the output -- and is idempotent: in-progress gone and
  final present means already committed (by the failed run, or by another subtask: the
  state is union list state, every subtask of the restored job sees every pending file and
  the first rename wins). Then it deletes the in-progress files of earlier attempts of this
  job and of the jobs the state came from: their rows are after the restored checkpoint and
  will be written again. Files of the current (job, attempt) are never touched;
* a restarted attempt that restores nothing (no checkpoint completed yet) deletes nothing:
  it cannot know that every other subtask restores nothing either, and a pending file
  deleted before another subtask's restore commits it would be lost rows. What the earlier
  attempts left stays hidden (readers skip it) until a later restore of the job deletes it,
  or the final checkpoint of a bounded job completes (``delete_earlier_attempts``);
* a file whose in-progress and final names are both gone when it must be committed means
  lost rows: an error, never silently skipped.

The sink's state is two union list states: ``pending-files`` (checkpoint id, in-progress
path, final path) and ``job-ids`` (every job whose files may be left in the directory).
Naming and leftover selection are pure functions (``part_prefix``, ``leftovers``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.paths import file_safe, from_file_safe
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.state.store import StateStore

IN_PROGRESS_SUFFIX = ".inprogress"
PENDING_SCHEMA = pa.schema([("checkpoint_id", pa.int64()), ("in_progress", pa.string()),
                            ("final", pa.string())])
JOBS_SCHEMA = pa.schema([("job_id", pa.string())])
# the job part may itself hold '-'; the three numbers after it never do, so the greedy
# group ends right before them
_IN_PROGRESS_NAME = re.compile(
    r"\.part-(?P<job>.+)-(?P<attempt>[0-9]+)-(?P<subtask>[0-9]+)-(?P<n>[0-9]+)"
    r"\.[^.]+" + re.escape(IN_PROGRESS_SUFFIX))


def part_prefix(job_id: str, attempt: int, subtask: int) -> str:
    """``part-<job>-<attempt>-<subtask>``: the final names of one subtask of one attempt
    (``-<n>.<ext>`` follows); the job id is made file-safe."""
    return f"part-{file_safe(job_id)}-{attempt}-{subtask}"


def in_progress_name(final_name: str) -> str:
    """The hidden name a file is written under (the filesystem source skips it)."""
    return f".{final_name}{IN_PROGRESS_SUFFIX}"


def leftovers(names: Iterable[str], job_ids: Iterable[str], job_id: str, attempt: int
              ) -> list[str]:
    """The names among ``names`` that are in-progress files of an attempt of one of
    ``job_ids`` other than the current one: of another job any attempt, of ``job_id``
    only attempts before ``attempt``."""
    jobs = set(job_ids)
    found = []
    for name in names:
        match = _IN_PROGRESS_NAME.fullmatch(name)
        if match is None:
            continue
        try:
            job = from_file_safe(match["job"])
        except (ValueError, UnicodeDecodeError):
            continue    # not a name this sink writes
        if job in jobs and (job != job_id or int(match["attempt"]) < attempt):
            found.append(name)
    return sorted(found)


@dataclass(frozen=True)
class PartFileNames:
    in_progress: Path
    final: Path


class PendingFiles:
    """The pending part files of one sink subtask, kept in its operator state."""

    def __init__(self, directory: Path, context: OperatorContext) -> None:
        self.directory = directory
        self.job_id = context.job_id
        self.attempt = context.attempt
        self._store = StateStore.for_context(context)
        self._pending = self._store.list_state("pending-files", PENDING_SCHEMA, "union")
        self._jobs = self._store.list_state("job-ids", JOBS_SCHEMA, "union")
        self._jobs.update(pa.table({"job_id": [self.job_id]}, schema=JOBS_SCHEMA))
        #: closed since the last snapshot: in no checkpoint yet
        self._closed: list[PartFileNames] = []

    def closed(self, file: PartFileNames) -> None:
        """``file`` is complete under its in-progress name; the next snapshot makes it
        pending."""
        self._closed.append(file)

    def snapshot(self, checkpoint_id: int) -> dict[str, pa.Table]:
        """The state of checkpoint ``checkpoint_id``: every file closed since the last
        snapshot becomes pending for it (made durable first, since the checkpoint will
        claim its rows), together with the files still pending from earlier ones."""
        for file in self._closed:
            _fsync(file.in_progress)
        if self._closed:
            self._pending.add(pa.table({
                "checkpoint_id": [checkpoint_id] * len(self._closed),
                "in_progress": [str(f.in_progress) for f in self._closed],
                "final": [str(f.final) for f in self._closed]}, schema=PENDING_SCHEMA))
            self._closed = []
        return self._store.snapshot()

    def checkpoint_complete(self, checkpoint_id: int) -> None:
        """Commit the files pending for checkpoints ``<= checkpoint_id``."""
        rows = self._pending.rows
        done = pc.less_equal(rows.column("checkpoint_id"), checkpoint_id)
        _commit_all(rows.filter(done))
        self._pending.update(rows.filter(pc.invert(done)))

    def commit_everything(self) -> None:
        """The input ended: every closed file, pending or not, becomes visible."""
        for file in self._closed:
            _commit(file)
        self._closed = []
        _commit_all(self._pending.rows)
        self._pending.update(PENDING_SCHEMA.empty_table())

    def discard_unsnapshotted(self) -> None:
        """After a failure or a cancel: the closed files no snapshot claimed are deleted
        (their rows will be replayed); pending files stay for a restore."""
        for file in self._closed:
            _delete(file.in_progress)
        self._closed = []

    def restore(self, tables: dict[str, pa.Table]) -> None:
        """Commit the restored pending files, then delete the leftovers of earlier
        attempts; see the module docstring."""
        self._store.restore(tables)
        _commit_all(self._pending.rows)
        self._pending.update(PENDING_SCHEMA.empty_table())
        known = set(self._jobs.rows.column("job_id").to_pylist()) | {self.job_id}
        self._jobs.update(pa.table({"job_id": sorted(known)}, schema=JOBS_SCHEMA))
        self._delete_leftovers(known)

    def delete_earlier_attempts(self) -> None:
        """Delete what earlier attempts left, once the final checkpoint of a bounded job
        completed: every subtask has restored (or had nothing to restore) long before, so
        no earlier attempt's file can still be committed by anyone."""
        self._delete_leftovers(set(self._jobs.rows.column("job_id").to_pylist())
                               | {self.job_id})

    def _delete_leftovers(self, job_ids: set[str]) -> None:
        if not self.directory.is_dir():
            return
        names = os.listdir(self.directory)
        for name in leftovers(names, job_ids, self.job_id, self.attempt):
            _delete(self.directory / name)


def _commit_all(rows: pa.Table) -> None:
    for in_progress, final in zip(rows.column("in_progress").to_pylist(),
                                  rows.column("final").to_pylist()):
        _commit(PartFileNames(Path(in_progress), Path(final)))


def _commit(file: PartFileNames) -> None:
    try:
        os.replace(file.in_progress, file.final)
    except FileNotFoundError:
        # committed before: by the failed run after its last checkpoint, or concurrently
        # by another subtask that restored the same pending file
        if not file.final.exists():
            raise ExecutionError(
                f"part file {file.final.name} of a completed checkpoint is gone (neither "
                f"{file.in_progress} nor {file.final} exists): its rows are lost") from None


def _delete(path: Path) -> None:
    # missing_ok: another subtask of the restored job may have deleted it first
    path.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
