"""The checkpoint coordinator of one running job (in the session process).

It wraps the bookkeeping state machine (``coordinator_state``) with the clock, a trigger
thread and the storage, and talks to the tasks through two callables so it does not care
whether they run in this process or on workers: ``trigger(checkpoint_id, timestamp_ms)``
injects a barrier at the tasks that own sources, ``complete(checkpoint_id)`` tells every
task that a checkpoint is durable. Tasks report back with ``acknowledge`` / ``decline``.

Completing checkpoint ``n``: every (operator, subtask) acknowledged -> ``_metadata`` written
(atomically, last) -> tasks notified -> retention applied (older checkpoints and shared
files no retained checkpoint references are deleted). A checkpoint that fails (declined,
expired, metadata not written) is deleted; more consecutive failures than
``execution.checkpointing.tolerable-failed-checkpoints`` fail the job (``fail_job``).

The end of a bounded job: once one task reached the end of its input
(``input_ended``), periodic checkpoints stop -- a task whose inputs all ended sees no
barrier any more -- and pending ones are dropped. When every task got there, the final
checkpoint is triggered (``final``): each task snapshots its final state at once, and its
completion lets the two-phase-commit sinks commit their last files before the tasks end.
A failed final checkpoint fails the job (its restart restores the latest checkpoint).

A savepoint (``trigger_savepoint``) is a checkpoint of kind ``savepoint``, forced past the
interval, the pause and the concurrency limit as in Flink, whose tasks write their files
into a new savepoint directory (``savepoint_storage``) instead of the job's checkpoint
directory: ``trigger_savepoint(checkpoint_id, timestamp_ms, directory)`` reaches every
task, since a task without sources of its own must know where to write when the barrier
reaches it. Its ``_metadata`` goes there too; checkpoint retention never deletes it. A
savepoint taken to stop the job pauses periodic checkpoints: none may complete after it,
or the sinks would commit rows the savepoint does not cover.

A stop with drain (``drain``) tells the tasks to end their own sources (``end_sources``)
as if their input ended; the job then ends as a bounded one does, and its final
checkpoint is the savepoint when one is asked (``final_savepoint(checkpoint_id,
directory)`` instead of ``final``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.config import CheckpointSettings
from flowsql.runtime.checkpoint.coordinator_state import (
    Aborted,
    AllAcknowledged,
    CheckpointCoordinatorState,
    JobVertex,
    Late,
    Triggered,
)
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, SubtaskState
from flowsql.runtime.checkpoint.savepoint_storage import KIND as SAVEPOINT
from flowsql.runtime.checkpoint.savepoint_storage import SavepointStorage
from flowsql.runtime.checkpoint.storage import CheckpointStorage

#: longest sleep of the trigger thread (it also expires overdue checkpoints)
_TICK_S = 0.05
#: completed checkpoints the coordinator remembers for the job's metrics
HISTORY = 100


@dataclass(frozen=True)
class CompletedCheckpoint:
    """What the job's metrics show of a completed checkpoint. ``size_bytes`` is everything
    a restore reads (the checkpoint's own files and the shared files it references),
    ``uploaded_bytes`` what this checkpoint added (its own files and the shared files no
    earlier checkpoint of the job referenced): they differ for incremental checkpoints,
    as Flink's full and checkpointed data sizes do."""

    checkpoint_id: int
    kind: str
    triggered_ms: int
    completed_ms: int
    size_bytes: int
    uploaded_bytes: int
    alignment_ms: int
    path: str

    @property
    def duration_ms(self) -> int:
        return self.completed_ms - self.triggered_ms


class CheckpointCoordinator:
    """See the module docstring."""

    def __init__(self, settings: CheckpointSettings, storage: CheckpointStorage,
                 vertices: Sequence[JobVertex], *,
                 trigger: Callable[[int, int], None], complete: Callable[[int], None],
                 fail_job: Callable[[str], None], final: Callable[[int], None],
                 tasks: int, next_checkpoint_id: int = 1,
                 trigger_savepoint: Callable[[int, int, str], None] | None = None,
                 end_sources: Callable[[], None] | None = None,
                 final_savepoint: Callable[[int, str], None] | None = None) -> None:
        self._end_sources = end_sources
        self._final_savepoint = final_savepoint
        #: the savepoint a stop with drain asked for, taken as the final checkpoint
        self._drain_savepoint: SavepointStorage | None = None
        self._draining = False
        self.settings = settings
        self.storage = storage
        self._trigger = trigger
        self._trigger_savepoint = trigger_savepoint
        #: the directories of this coordinator's savepoints, by checkpoint id
        self._savepoints: dict[int, SavepointStorage] = {}
        self._completed_savepoints: set[int] = set()
        #: the location of the last completed savepoint
        self.last_savepoint: str | None = None
        #: a stop-with-savepoint is under way: no periodic checkpoint is triggered
        self._periodic_paused = False
        #: the newest checkpoint whose completion the tasks were told of
        self._notified: int | None = None
        self._complete = complete
        self._fail_job = fail_job
        self._final = final
        self._tasks = tasks
        self._ended_tasks = 0
        self.final_checkpoint_id: int | None = None
        self._lock = threading.RLock()
        self._state = CheckpointCoordinatorState(storage.job_id, settings.coordinator,
                                                 vertices, _now_ms(), next_checkpoint_id)
        self._alignment: dict[int, int] = {}
        #: shared files some completed checkpoint of this coordinator referenced
        self._shared_seen: set[str] = set()
        self._completed = threading.Condition(self._lock)
        self._stopped = threading.Event()
        self._finished_task = False
        self.last_completed: CompletedCheckpoint | None = None
        #: the most recent completed checkpoints (at most ``HISTORY``), oldest first
        self.history: list[CompletedCheckpoint] = []
        self.completed_count = 0
        self.failed_count = 0
        self._thread = threading.Thread(target=self._run, name="checkpoint coordinator",
                                        daemon=True)

    @property
    def next_checkpoint_id(self) -> int:
        return self._state.next_checkpoint_id

    def start(self) -> None:
        self._thread.start()

    def stop(self, reason: str = "the job ended") -> None:
        """Stop triggering; pending checkpoints are aborted (their files deleted)."""
        self._stopped.set()
        with self._lock:
            aborted = self._state.abort_all(reason)
        for abort in aborted:
            self._discard(abort)
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(2.0)

    def task_finished(self) -> None:
        """A task of the job ended: no checkpoint can complete any more (module docstring)."""
        with self._lock:
            if self._finished_task:
                return
            self._finished_task = True
            aborted = self._state.abort_all("a task of the job finished")
        for abort in aborted:
            self._discard(abort)

    def input_ended(self) -> None:
        """A task reached the end of its input. Periodic checkpoints stop (a task whose
        inputs all ended sees no barrier any more); once every task got there, the final
        checkpoint is triggered: each task snapshots its final state at once."""
        with self._lock:
            self._ended_tasks += 1
            first = self._ended_tasks == 1
            aborted = (self._state.abort_all("the input of a task ended") if first else ())
            if first:
                self._finished_task = True  # no more periodic triggers
            final = self._final_due()
        for abort in aborted:
            self._discard(abort)
        self._send_final(final)

    def _final_due(self) -> int | None:
        """Trigger the final checkpoint if every task reached the end of its input (under
        the lock). Not while a stop-with-savepoint waits: a final checkpoint completing
        after the savepoint would commit rows the savepoint does not cover."""
        if (self._ended_tasks < self._tasks or self._stopped.is_set()
                or self._periodic_paused or self.final_checkpoint_id is not None):
            return None
        savepoint = self._drain_savepoint
        result = self._state.trigger(
            _now_ms(), kind="checkpoint" if savepoint is None else SAVEPOINT, force=True)
        assert isinstance(result, Triggered)
        self.final_checkpoint_id = result.checkpoint_id
        if savepoint is not None:
            self._savepoints[result.checkpoint_id] = savepoint
        return result.checkpoint_id

    def _send_final(self, final: int | None) -> None:
        if final is None:
            return
        savepoint = self._savepoints.get(final)
        if savepoint is not None and self._final_savepoint is not None:
            self._final_savepoint(final, savepoint.location)
        else:
            self._final(final)

    def drain(self, directory: str | None) -> str | None:
        """Stop with drain: the tasks end their own sources as if their input ended; the
        job's final checkpoint is then a savepoint into a new directory under
        ``directory`` (its location is returned) or, without one, a checkpoint."""
        if self._end_sources is None or self._final_savepoint is None:
            raise ExecutionError("this job cannot be drained")
        with self._lock:
            if (self._stopped.is_set() or self.final_checkpoint_id is not None
                    or self._draining):
                raise ExecutionError("the job is ending already")
            self._draining = True
            if directory is not None:
                self._drain_savepoint = SavepointStorage.create(directory,
                                                                self.storage.job_id)
        self._end_sources()
        return None if self._drain_savepoint is None else self._drain_savepoint.location

    def wait_final(self, timeout_s: float) -> bool:
        """Block until the final checkpoint completed and the tasks were told (True), or
        it failed, the coordinator stopped or the time ran out (False)."""
        deadline = time.monotonic() + timeout_s
        with self._completed:
            while self.final_checkpoint_id is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stopped.is_set():
                    return False
                self._completed.wait(min(remaining, _TICK_S))
            final = self.final_checkpoint_id
        return self.wait_completed(final, max(0.0, deadline - time.monotonic()))

    # -- triggering --------------------------------------------------------------------------

    def trigger_now(self) -> int | None:
        """Start a checkpoint at once, past the interval, the pause and the concurrency
        limit (the checkpoint a stop takes); None when no checkpoint can complete any
        more."""
        with self._lock:
            if self._finished_task or self._stopped.is_set():
                return None
            result = self._state.trigger(_now_ms(), force=True)
        assert isinstance(result, Triggered)
        self._trigger(result.checkpoint_id, result.timestamp_ms)
        return result.checkpoint_id

    def trigger_savepoint(self, directory: str, stop: bool) -> tuple[int, str]:
        """Start a savepoint into a new directory under ``directory`` at once; returns its
        checkpoint id and location. ``stop``: the job ends after it, so periodic
        checkpoints pause (``resume_periodic`` when the savepoint failed). Raises
        ``ExecutionError`` when no checkpoint can complete any more (the job is ending)."""
        if self._trigger_savepoint is None:
            raise ExecutionError("this job cannot take savepoints")
        with self._lock:
            if self._stopped.is_set():
                raise ExecutionError("the job's run ended (it finished, failed or is "
                                     "restarting): no savepoint can be taken now")
            if self._finished_task:
                raise ExecutionError("the job is ending (a task reached the end of its "
                                     "input): no savepoint can be taken any more")
            result = self._state.trigger(_now_ms(), kind=SAVEPOINT)
            assert isinstance(result, Triggered)
            storage = SavepointStorage.create(directory, self.storage.job_id)
            self._savepoints[result.checkpoint_id] = storage
            if stop:
                self._periodic_paused = True
        self._trigger_savepoint(result.checkpoint_id, result.timestamp_ms, storage.location)
        return result.checkpoint_id, storage.location

    def resume_periodic(self) -> None:
        """Periodic checkpoints go on (a stop-with-savepoint failed), and the final
        checkpoint if every task reached the end of its input meanwhile."""
        with self._lock:
            self._periodic_paused = False
            final = self._final_due()
        self._send_final(final)

    def wait_completed(self, checkpoint_id: int, timeout_s: float) -> bool:
        """Block until checkpoint ``checkpoint_id`` completed and the tasks were told
        (True), or failed or the time ran out (False)."""
        deadline = time.monotonic() + timeout_s
        with self._completed:
            while True:
                if checkpoint_id not in self._state.pending_ids:
                    done = self._state.last_completed_id
                    if done is None or done < checkpoint_id:
                        return False  # aborted
                    if (self._notified or 0) >= checkpoint_id:
                        return True
                    # completed; the notice to the tasks is on its way
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._completed.wait(min(remaining, _TICK_S))

    def _run(self) -> None:
        while not self._stopped.wait(_TICK_S):
            now = _now_ms()
            with self._lock:
                if self._finished_task:
                    continue
                expired = self._state.expire(now)
                result = None if self._periodic_paused else self._state.trigger(now)
            for abort in expired:
                self._on_failed(abort)
            if isinstance(result, Triggered):
                self._trigger(result.checkpoint_id, result.timestamp_ms)

    # -- acknowledgements --------------------------------------------------------------------

    def acknowledge(self, checkpoint_id: int, states: dict[str, SubtaskState],
                    alignment_ms: int = 0) -> None:
        """One task's operators acknowledged ``checkpoint_id`` (by operator id)."""
        done: AllAcknowledged | None = None
        late: list[SubtaskState] = []
        with self._lock:
            self._alignment[checkpoint_id] = max(self._alignment.get(checkpoint_id, 0),
                                                 alignment_ms)
            for operator_id, state in states.items():
                result = self._state.acknowledge(checkpoint_id, operator_id, state, _now_ms())
                if isinstance(result, AllAcknowledged):
                    done = result
                elif isinstance(result, Late):
                    late.append(result.state)
        if late and done is None:
            self._delete_late(checkpoint_id)
        if done is not None:
            self._finish(done.metadata)

    def decline(self, checkpoint_id: int, reason: str) -> None:
        with self._lock:
            aborted = self._state.decline(checkpoint_id, "task", 0, reason)
        if aborted is not None:
            self._on_failed(aborted)

    def _finish(self, metadata: CheckpointMetadata) -> None:
        savepoint = self._savepoints.get(metadata.checkpoint_id)
        try:
            (self.storage if savepoint is None else savepoint).commit(metadata)
        except Exception as error:
            with self._lock:
                aborted = self._state.metadata_failed(metadata.checkpoint_id, str(error))
            self._on_failed(aborted)
            return
        shared = set(metadata.shared_files)
        try:
            sizes = self.storage.file_sizes(sorted(shared))
        except OSError:
            sizes = {}
        new_shared = sum(sizes.get(name, 0) for name in shared - self._shared_seen)
        self._shared_seen |= shared
        with self._completed:
            notice = self._state.metadata_written(metadata.checkpoint_id, _now_ms())
            self.completed_count += 1
            self.last_completed = CompletedCheckpoint(
                metadata.checkpoint_id, metadata.kind, metadata.timestamp_ms,
                metadata.completed_ms, metadata.size_bytes + sum(sizes.values()),
                metadata.size_bytes + new_shared,
                self._alignment.pop(metadata.checkpoint_id, 0),
                (f"{self.storage.job_path}/chk-{metadata.checkpoint_id}"
                 if savepoint is None else savepoint.location))
            self.history = [*self.history[-(HISTORY - 1):], self.last_completed]
            if savepoint is not None:
                self._completed_savepoints.add(metadata.checkpoint_id)
                self.last_savepoint = savepoint.location
            in_use = self._state.shared_files_in_use()
            self._completed.notify_all()
        self._complete(notice.checkpoint_id)
        with self._completed:
            self._notified = max(self._notified or 0, notice.checkpoint_id)
            self._completed.notify_all()
        for abort in notice.subsumed:
            self._discard(abort)
        self.storage.apply_retention(self.settings.num_retained, in_use)

    def _on_failed(self, aborted: Aborted) -> None:
        self.failed_count += 1
        self._discard(aborted)
        with self._completed:
            self._completed.notify_all()
        if aborted.checkpoint_id == self.final_checkpoint_id:
            self._fail_job(f"the final checkpoint {aborted.checkpoint_id} failed "
                           f"({aborted.reason})")
        elif aborted.fail_job:
            self._fail_job(f"checkpoint {aborted.checkpoint_id} failed ({aborted.reason}) "
                           "and no more failed checkpoints are tolerated "
                           "(execution.checkpointing.tolerable-failed-checkpoints)")

    def _discard(self, aborted: Aborted) -> None:
        self._alignment.pop(aborted.checkpoint_id, None)
        self._delete_late(aborted.checkpoint_id)

    def _delete_late(self, checkpoint_id: int) -> None:
        """Files of a checkpoint that will never complete (never a completed one)."""
        savepoint = self._savepoints.get(checkpoint_id)
        if savepoint is not None:
            if checkpoint_id not in self._completed_savepoints:
                # on an error its owner deletes it: nothing else ever will
                with contextlib.suppress(OSError):
                    savepoint.discard_all()
            return
        try:
            completed = {d.checkpoint_id for d in self.storage.list_checkpoints()
                         if d.completed}
            if checkpoint_id not in completed:
                self.storage.discard(checkpoint_id)
        except OSError:
            pass  # retention deletes it later

    # -- metrics -----------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        last = self.last_completed
        history = list(self.history)
        return {
            "checkpoints_completed": self.completed_count,
            "checkpoints_failed": self.failed_count,
            "average_duration_ms": (sum(c.duration_ms for c in history) / len(history)
                                    if history else None),
            "average_size_bytes": (sum(c.size_bytes for c in history) / len(history)
                                   if history else None),
            "average_uploaded_bytes": (sum(c.uploaded_bytes for c in history) / len(history)
                                       if history else None),
            "last_savepoint": self.last_savepoint,
            "last_checkpoint": None if last is None else {
                "id": last.checkpoint_id, "kind": last.kind,
                "duration_ms": last.duration_ms, "size_bytes": last.size_bytes,
                "uploaded_bytes": last.uploaded_bytes,
                "alignment_ms": last.alignment_ms, "completed_ms": last.completed_ms,
                "path": last.path},
        }


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
