"""A streaming job in this process with checkpoints and restarts.

The whole plan is one task (the plan's stable operator ids) whose sources are its own: the
coordinator's trigger is a barrier for all of them at once, taken between two turns of the
run, so no alignment waits. Snapshots are written by the task's writer thread while the
run goes on; completion notices are carried out at the start of the next turn. A failing
operator fails the attempt; ``RecoveringRun`` restarts it from the latest completed
checkpoint within the restart strategy.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.operator_ids import operator_ids
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.checkpoint.coordinator_state import JobVertex
from flowsql.runtime.checkpoint.recovery import FINAL_CHECKPOINT_TIMEOUT_S, RecoveringRun
from flowsql.runtime.checkpoint.task_checkpointer import (
    Acknowledgement,
    Decline,
    InputEnded,
    TaskCheckpointer,
)
from flowsql.runtime.checkpoint.task_state import RestoreSource, TaskState, restore_states
from flowsql.runtime.streaming.executor import StreamingRun


class LocalRecoveringRun(RecoveringRun):
    """See the module docstring."""

    def __init__(self, plan: PhysicalPlan, settings: dict[str, str]) -> None:
        super().__init__(settings)
        self.plan = plan
        self._run: StreamingRun | None = None
        self._checkpointer: TaskCheckpointer | None = None
        self._failure: str | None = None
        self._ended = threading.Event()
        self._ended_early = threading.Event()

    def _attempt(self, restore: RestoreSource | None, attempt: int
                 ) -> Iterator[pa.RecordBatch]:
        ids = operator_ids(self.plan)
        local_dir = self.checkpointing.rocksdb_dir if self.checkpointing else None
        restored = (restore_states(restore, ids, 0, 1, local_dir)
                    if restore is not None else None)
        self._failure = None
        self._ended.clear()
        self._ended_early = threading.Event()
        task_state: TaskState | None = None
        checkpointer: TaskCheckpointer | None = None
        if self.checkpointing is not None:
            task_state = TaskState(self.checkpointing, self.job_id, 0)
            checkpointer = TaskCheckpointer(self.checkpointing.mode, 0, True,
                                            task_state.persist, self._report,
                                            cancelled=self._ended_early)
            max_parallelism = SettingValues(self.settings).integer("max_parallelism")
            self._new_coordinator(
                [JobVertex(operator_id, 1, max_parallelism) for operator_id in ids],
                trigger=lambda n, ts: checkpointer.commands.put(  # type: ignore[union-attr]
                    {"type": "trigger", "checkpoint": n, "timestamp": ts}),
                complete=lambda n: checkpointer.commands.put(  # type: ignore[union-attr]
                    {"type": "complete", "checkpoint": n}),
                fail_job=self._fail,
                final=lambda n: checkpointer.commands.put(  # type: ignore[union-attr]
                    {"type": "final", "checkpoint": n}),
                tasks=1,
                trigger_savepoint=lambda n, ts, directory: (
                    checkpointer.commands.put(  # type: ignore[union-attr]
                        {"type": "trigger", "checkpoint": n, "timestamp": ts,
                         "savepoint": directory})),
                end_sources=lambda: checkpointer.commands.put(  # type: ignore[union-attr]
                    {"type": "drain"}),
                final_savepoint=lambda n, directory: (
                    checkpointer.commands.put(  # type: ignore[union-attr]
                        {"type": "final", "checkpoint": n, "savepoint": directory})))
        self._checkpointer = checkpointer
        run = StreamingRun(self.plan, self.settings, job_id=self.job_id, attempt=attempt,
                           checkpointing=checkpointer, restore=restored)
        self._run = run
        if self._cancelled.is_set():
            run.cancel()
        if self.coordinator is not None:
            self.coordinator.start()
        try:
            for element in run.elements():
                if self._failure is not None:
                    raise ExecutionError(self._failure)
                if isinstance(element, pa.RecordBatch):
                    yield element
            if self._failure is not None:
                raise ExecutionError(self._failure)
        finally:
            if self.coordinator is not None:
                self.coordinator.task_finished()
            if checkpointer is not None:
                checkpointer.close()
            self._end_coordinator("the attempt ended")
            if task_state is not None:
                task_state.close()
            self._ended.set()

    def _report(self, message: Acknowledgement | Decline | InputEnded) -> None:
        coordinator = self.coordinator
        if coordinator is None:
            return
        if isinstance(message, Acknowledgement):
            coordinator.acknowledge(message.checkpoint_id, message.states,
                                    message.alignment_ms)
        elif isinstance(message, Decline):
            coordinator.decline(message.checkpoint_id, message.reason)
        else:
            coordinator.input_ended()

    def _fail(self, reason: str) -> None:
        self._failure = reason
        self._ended_early.set()  # also ends a wait for the final checkpoint

    def _cancel_attempt(self) -> None:
        self._ended_early.set()
        if self._run is not None:
            self._run.cancel()

    def _stop_attempt(self) -> None:
        checkpointer = self._checkpointer
        if checkpointer is None:
            return
        # the completion notice of the final checkpoint is queued before the stop, and the
        # run carries out its commands in order: the sinks commit, then the run ends
        checkpointer.commands.put({"type": "stop"})
        self._ended.wait(FINAL_CHECKPOINT_TIMEOUT_S)

    def metrics(self) -> list[dict[str, Any]]:
        return self._run.metrics() if self._run is not None else []
