"""A streaming plan with exchanges run on the mini-cluster, seen from the session.

It offers what the single-process :class:`StreamingRun` offers, so a continuous job
(``INSERT INTO``) and a streamed SELECT do not care where they run: ``batches()`` submits
the job and yields the root stage's output as it arrives (a changelog when the result is
updating), ``cancel()`` stops it from another thread, and ``metrics()`` gives per operator
the records in/out, the current watermark and the operators' own counters, combined over
its subtasks (counters summed; the watermark is the smallest, the event time the whole
operator has reached). While the job runs the metrics come from the subtasks' periodic
reports, so they may be up to half a second old; after it ends they are exact.

With checkpointing on, each attempt has a :class:`CheckpointCoordinator` that talks to the
tasks through job messages (``trigger``, with ``savepoint``: the savepoint's directory
for a savepoint, ``complete``, ``final`` (with ``savepoint`` when a drained job's final
checkpoint is a savepoint), ``stop``, ``drain`` to the tasks;
``checkpoint_ack``, ``checkpoint_decline``, ``input_ended`` back), and every task's
deployment carries the job's checkpoint id, the attempt and the checkpoint to restore. A
failed attempt (a task failed, a worker died) is restarted by :class:`RecoveringRun`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any, Protocol

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.channels import ChannelServer
from flowsql.runtime.checkpoint.coordinator import CheckpointCoordinator
from flowsql.runtime.checkpoint.coordinator_state import JobVertex
from flowsql.runtime.checkpoint.metadata import SubtaskState
from flowsql.runtime.checkpoint.recovery import FINAL_CHECKPOINT_TIMEOUT_S, RecoveringRun
from flowsql.runtime.checkpoint.task_state import RestoreSource
from flowsql.runtime.cluster import Job, MiniCluster
from flowsql.runtime.jobgraph import build_job_graph
from flowsql.runtime.parallel.result_channels import (
    receive_results,
    register_results,
    unregister_results,
)
from flowsql.runtime.parallel.stage_deployment import (
    STREAMING_TASK_KIND,
    deployment,
    forwarding_root,
)

_SUBTASK = re.compile(r" in subtask \d+ of (\d+) of (stage-\d+)$")


class ClusterReservation(Protocol):
    """What a run needs of its runner (``ParallelRunner.reserve``)."""

    def reserve(self, parallelism: int) -> tuple[MiniCluster, ChannelServer, str]: ...


class ParallelStreamingRun(RecoveringRun):
    """One run of a streaming plan on ``runner``'s cluster (see the module docstring)."""

    def __init__(self, runner: ClusterReservation, plan: PhysicalPlan, settings: dict[str, str],
                 parallelism: int) -> None:
        super().__init__(settings)
        self.plan = plan
        self._runner = runner
        self._parallelism = parallelism
        self._graph = build_job_graph(plan, parallelism)
        if self._graph.root.parallelism != 1:
            raise ExecutionError("the root of a parallel plan must run on one subtask "
                                 "(a gather exchange is missing)")
        self._job: Job | None = None
        self._cluster: MiniCluster | None = None
        self._attempt_cancelled = threading.Event()

    def _attempt(self, restore: RestoreSource | None, attempt: int
                 ) -> Iterator[pa.RecordBatch]:
        cluster, server, name = self._runner.reserve(self._parallelism)
        self._cluster = cluster
        host, port = server.address
        tasks, edges, names = deployment(self._graph, self.settings, cluster,
                                         {"channel": name, "host": host, "port": port},
                                         STREAMING_TASK_KIND)
        if self.checkpointing is not None or restore is not None:
            checkpoint = {"job_id": self.job_id, "attempt": attempt,
                          "restore": None if restore is None else restore.to_dict()}
            tasks = [replace(t, config={**t.config, "checkpoint": checkpoint}) for t in tasks]
        channels = register_results(server, names, self.settings)
        self._attempt_cancelled = threading.Event()
        if self._cancelled.is_set():
            self._attempt_cancelled.set()
        try:
            job = cluster.submit(tasks, edges, self.settings)
            self._job = job
            coordinator = self._new_coordinator(
                self._vertices(),
                trigger=lambda n, ts: job.send({"type": "trigger", "checkpoint": n,
                                                "timestamp": ts}),
                complete=lambda n: job.send({"type": "complete", "checkpoint": n}),
                fail_job=lambda reason: job.fail(ExecutionError(reason)),
                final=lambda n: job.send({"type": "final", "checkpoint": n}),
                tasks=len(tasks),
                # every task: one without sources of its own writes where this says
                trigger_savepoint=lambda n, ts, directory: job.send(
                    {"type": "trigger", "checkpoint": n, "timestamp": ts,
                     "savepoint": directory}),
                end_sources=lambda: job.send({"type": "drain"}),
                final_savepoint=lambda n, directory: job.send(
                    {"type": "final", "checkpoint": n, "savepoint": directory}))
            if coordinator is not None:
                job.on_message = lambda task, message: self._on_task_message(
                    coordinator, message)
                job.on_task_finished = lambda task: coordinator.task_finished()
                coordinator.start()
            yield from receive_results(job, channels, self._attempt_cancelled)
        finally:
            self._end_coordinator("the attempt ended")
            unregister_results(server, channels)
            current = self._job
            if current is not None and not current.wait_terminated(30.0):
                raise ExecutionError(f"the tasks of job {current.id} did not stop within 30 s")

    def _vertices(self) -> list[JobVertex]:
        max_parallelism = SettingValues(self.settings).integer("max_parallelism")
        return [JobVertex(operator_id, stage.parallelism, max_parallelism)
                for stage in self._graph.stages
                for operator_id in stage.operator_ids
                if not self._skipped(stage)]

    def _skipped(self, stage: Any) -> bool:
        """The root stage is not deployed when it would only forward a gather."""
        return stage.id == self._graph.root.id and forwarding_root(self._graph) is not None

    def _on_task_message(self, coordinator: CheckpointCoordinator,
                         message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "checkpoint_ack":
            states = {op: SubtaskState.from_dict(state)
                      for op, state in message["states"].items()}
            coordinator.acknowledge(int(message["checkpoint"]), states,
                                    int(message.get("alignment_ms", 0)))
        elif kind == "checkpoint_decline":
            coordinator.decline(int(message["checkpoint"]), str(message["reason"]))
        elif kind == "input_ended":
            coordinator.input_ended()

    def _cancel_attempt(self) -> None:
        self._attempt_cancelled.set()

    def _stop_attempt(self) -> None:
        job = self._job
        if job is None:
            return
        job.send({"type": "stop"})
        job.wait_terminated(FINAL_CHECKPOINT_TIMEOUT_S)

    def _prepare_restart(self) -> None:
        if self._cluster is not None:
            self._cluster.replace_lost_workers()

    def metrics(self) -> list[dict[str, Any]]:
        """Per operator, over all its subtasks (see the module docstring)."""
        job = self._job
        if job is None:
            return []
        reports = {**job.progress, **job.results}
        combined: dict[str, dict[str, Any]] = {}
        for task in sorted(reports):
            for entry in reports[task].get("metrics", []):
                label = _SUBTASK.sub(r" in \2", entry["operator"])
                into = combined.setdefault(label, {"operator": label})
                _combine(into, entry)
        return list(combined.values())


def _combine(into: dict[str, Any], entry: dict[str, Any]) -> None:
    into["subtasks"] = into.get("subtasks", 0) + 1
    for key, value in entry.items():
        if key == "operator":
            continue
        if key == "watermark":
            known = into.get(key, value) if "watermark" in into else value
            into[key] = None if value is None or known is None else min(known, value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value
        else:
            into.setdefault(key, value)
