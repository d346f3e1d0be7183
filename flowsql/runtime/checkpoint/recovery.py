"""A streaming job that survives failures: attempts, restarts and the stop with a final
checkpoint, independent of where the tasks run.

``RecoveringRun`` drives attempts of one job. An attempt (``_attempt``, given by the
subclass: the single-process run or the run on worker processes) deploys the job's tasks,
restoring them from a checkpoint when there is one, and yields the job's output. When an
attempt fails -- a task raised, a worker process died -- the restart strategy
(``restart-strategy.*``) decides: restart after its delay from the latest completed
checkpoint of this job (or, when none completed yet, from where the job started: the
``execution.savepoint.path`` checkpoint or nothing), or fail the job.

Every attempt of the job writes its checkpoints under the same job id, and numbers them
on from the previous attempt, so the latest completed checkpoint is simply the highest id.
``cancel`` stops the job with a final checkpoint when checkpointing is on: the sinks commit
what the checkpoint covers and nothing is left half-written. ``stop_with_savepoint`` stops
it the same way after a savepoint (Flink's stop-with-savepoint): the job then counts as
FINISHED, and a new job started with ``execution.savepoint.path`` = the savepoint goes on
from there. A savepoint that fails leaves the job running, as in Flink.
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from flowsql.errors import ConfigError, ExecutionError, FlowSQLError
from flowsql.runtime.checkpoint.config import CheckpointSettings, restart_strategy
from flowsql.runtime.checkpoint.coordinator import CheckpointCoordinator
from flowsql.runtime.checkpoint.restart import decide
from flowsql.runtime.checkpoint.storage import CheckpointStorage
from flowsql.runtime.checkpoint.task_state import RestoreSource

#: how long ``cancel`` waits for the final checkpoint before it cancels without one
FINAL_CHECKPOINT_TIMEOUT_S = 60.0
#: how long a stop-with-savepoint waits for the savepoint before it gives up (job running)
SAVEPOINT_TIMEOUT_S = 120.0
SAVEPOINT_DIR = "execution.checkpointing.savepoint-dir"


class RecoveringRun:
    """Base of the streaming runs (see the module docstring); subclasses implement
    ``_attempt``, ``_cancel_attempt`` and ``_stop_attempt``."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings
        self.checkpointing = CheckpointSettings.of(settings)
        self.strategy = restart_strategy(settings)
        self.job_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:12]}"
        self.storage = (CheckpointStorage.from_uri(self.checkpointing.directory, self.job_id)
                        if self.checkpointing is not None else None)
        self.initial_restore = savepoint_source(settings)
        self.coordinator: CheckpointCoordinator | None = None
        self.restarts = 0
        self.restarting = False
        self._cancelled = threading.Event()
        self._next_checkpoint_id = 1
        #: the savepoint the job was stopped with (it then ends FINISHED)
        self.stopped_with_savepoint: str | None = None
        self._last_savepoint: str | None = None

    # -- the Run protocol --------------------------------------------------------------------

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def batches(self) -> Iterator[pa.RecordBatch]:
        restore = self.initial_restore
        failure_times: list[int] = []
        attempt = 0
        while True:
            try:
                if attempt:
                    self._prepare_restart()  # may fail too (a new worker killed at once)
                yield from self._attempt(restore, attempt)
                return
            except FlowSQLError as error:
                if self._cancelled.is_set():
                    return
                failure_times.append(time.time_ns() // 1_000_000)
                decision = decide(self.strategy, failure_times, random.uniform(-1.0, 1.0))
                if not decision.restart:
                    if self.restarts:
                        raise type(error)(f"{error} (the job was restarted {self.restarts} "
                                          f"times; {decision.reason})") from error
                    raise
                self.restarting = True
                try:
                    if self._cancelled.wait(decision.delay_ms / 1000):
                        return
                finally:
                    self.restarting = False
                self.restarts += 1
                attempt += 1
                restore = self._latest_restore() or self.initial_restore

    def cancel(self) -> None:
        """Stop the job: with checkpointing on, after a final checkpoint that every sink
        commits (``FINAL_CHECKPOINT_TIMEOUT_S`` at most), else at once."""
        if self._cancelled.is_set():
            return
        self._cancelled.set()  # from here on a failure ends the job instead of a restart
        coordinator = self.coordinator
        if coordinator is not None:
            checkpoint_id = coordinator.trigger_now()
            if checkpoint_id is not None and coordinator.wait_completed(
                    checkpoint_id, FINAL_CHECKPOINT_TIMEOUT_S):
                self._stop_attempt()
        self._cancel_attempt()

    def stop_with_savepoint(self, directory: str | None = None) -> str:
        """Take a savepoint into a new directory under ``directory`` (default
        ``execution.checkpointing.savepoint-dir``), let the sinks commit what it covers,
        then end the job; returns the savepoint's location. Raises, leaving the job
        running, when no savepoint can be taken or it fails."""
        base = self._savepoint_base(directory)
        coordinator = self._running_coordinator("a savepoint")
        checkpoint_id, location = coordinator.trigger_savepoint(base, stop=True)
        if not coordinator.wait_completed(checkpoint_id, SAVEPOINT_TIMEOUT_S):
            coordinator.resume_periodic()
            raise ExecutionError(f"savepoint {checkpoint_id} did not complete (see the "
                                 "job's checkpoint failures); the job keeps running")
        self.stopped_with_savepoint = self._last_savepoint = location
        self._cancelled.set()
        self._stop_attempt()
        self._cancel_attempt()
        return location

    def stop_with_drain(self, savepoint: bool, directory: str | None = None) -> str | None:
        """Stop with drain (Flink's ``--drain``): the sources end as if their input ended,
        so the final watermark fires every window, and the job ends as a bounded job does,
        its final checkpoint being a savepoint (``savepoint``: location returned) that the
        sinks commit. Waits until the job's final checkpoint completed."""
        base = self._savepoint_base(directory) if savepoint else None
        coordinator = self._running_coordinator("a stop with drain")
        location = coordinator.drain(base)
        if not coordinator.wait_final(SAVEPOINT_TIMEOUT_S):
            raise ExecutionError("the drained job's final checkpoint did not complete "
                                 "(see the job's checkpoint failures)")
        if location is not None:
            self._last_savepoint = location
        return location

    def _savepoint_base(self, directory: str | None) -> str:
        from flowsql.planner.config.settings import SettingValues

        base = directory or SettingValues(self.settings).get(SAVEPOINT_DIR)
        if not base:
            raise ConfigError(f"no savepoint directory: set '{SAVEPOINT_DIR}' "
                              "(state.savepoints.dir) or name one in the stop")
        return str(base)

    def _running_coordinator(self, what: str) -> CheckpointCoordinator:
        if self._cancelled.is_set():
            raise ExecutionError("the job is stopping already")
        coordinator = self.coordinator
        if coordinator is None:
            if self.checkpointing is None:
                raise ExecutionError(
                    f"{what} needs checkpointing: set 'execution.checkpointing.interval' "
                    "before the job starts")
            raise ExecutionError("the job has no running attempt (it is restarting); "
                                 "try again")
        return coordinator

    def checkpoint_summary(self) -> dict[str, Any] | None:
        """Restarts, whether the job is waiting to restart, and its last checkpoint."""
        coordinator = self.coordinator
        summary: dict[str, Any] = {"restarts": self.restarts, "restarting": self.restarting,
                                   "last_checkpoint": None, "checkpoints_completed": 0,
                                   "checkpoints_failed": 0, "job_id": self.job_id,
                                   "checkpoint_dir": (None if self.storage is None
                                                      else self.storage.job_path)}
        if coordinator is not None:
            summary.update(coordinator.summary())
        summary["last_savepoint"] = summary.get("last_savepoint") or self._last_savepoint
        return summary

    # -- for subclasses ----------------------------------------------------------------------

    def _attempt(self, restore: RestoreSource | None, attempt: int
                 ) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def _cancel_attempt(self) -> None:
        raise NotImplementedError

    def _stop_attempt(self) -> None:
        """Tell every task to end after the completion notice it got last (the final
        checkpoint's) and wait until they ended."""
        raise NotImplementedError

    def _prepare_restart(self) -> None:
        """Whatever the next attempt needs (new workers for lost ones)."""

    def _new_coordinator(self, vertices: Any, trigger: Any, complete: Any,
                         fail_job: Any, final: Any, tasks: int,
                         trigger_savepoint: Any = None, end_sources: Any = None,
                         final_savepoint: Any = None) -> CheckpointCoordinator | None:
        """The coordinator of one attempt (None when checkpointing is off); ids go on from
        the previous attempt's."""
        if self.checkpointing is None or self.storage is None:
            return None
        coordinator = CheckpointCoordinator(
            self.checkpointing, self.storage, vertices, trigger=trigger, complete=complete,
            fail_job=fail_job, final=final, tasks=tasks,
            next_checkpoint_id=self._next_checkpoint_id, trigger_savepoint=trigger_savepoint,
            end_sources=end_sources, final_savepoint=final_savepoint)
        self.coordinator = coordinator
        return coordinator

    def _end_coordinator(self, reason: str) -> None:
        coordinator = self.coordinator
        if coordinator is not None:
            coordinator.stop(reason)
            self._next_checkpoint_id = coordinator.next_checkpoint_id
            self._last_savepoint = coordinator.last_savepoint or self._last_savepoint

    def _latest_restore(self) -> RestoreSource | None:
        if self.storage is None or self.checkpointing is None:
            return None
        latest = self.storage.latest_completed()
        if latest is None:
            return None
        return RestoreSource.checkpoint(self.checkpointing.directory, self.job_id,
                                        latest.checkpoint_id)


def savepoint_source(settings: dict[str, str]) -> RestoreSource | None:
    """The snapshot ``execution.savepoint.path`` names -- a checkpoint
    (``<dir>/<job id>/chk-<n>``) or a savepoint directory -- checked to be a completed one;
    None when unset."""
    from flowsql.planner.config.settings import SettingValues

    path = SettingValues(settings).get("execution.savepoint.path")
    if not path:
        return None
    text = str(path).rstrip("/")
    source = RestoreSource(text if "://" in text else os.path.abspath(text))
    try:
        source.open()
    except FlowSQLError as error:
        raise ExecutionError(f"execution.savepoint.path: {error}") from None
    return source
