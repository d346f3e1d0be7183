"""Run a physical plan with exchanges on a mini-cluster and return the result table.

A :class:`ParallelRunner` owns one :class:`MiniCluster` (started on first use with one
worker per subtask of the widest stage) and one channel server in the calling process, on
which the root stage's single subtask sends the result batches. Subtask ``i`` of every
stage is pinned to worker ``i % workers``, so the subtasks of one stage spread over all
workers. ``close`` stops the workers and reaps them; a session closes its runner.

A failing task fails the job at once (the cluster cancels the rest); the runner then
raises the job's error, which names the task (stage and subtask) and, from inside the task,
the operator. If the result channel breaks first, the runner waits briefly for that root
cause rather than reporting the broken channel.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.physical import PhysicalPlan
from flowsql.planner.schema import to_arrow_schema
from flowsql.runtime.channels import (
    ChannelError,
    ChannelServer,
    ChannelSettings,
    InputGate,
    RemoteInputChannel,
)
from flowsql.runtime.cluster import EdgeSpec, Job, MiniCluster, TaskSpec
from flowsql.runtime.cluster.coordinator import SYMPTOM_GRACE_S
from flowsql.runtime.jobgraph import JobGraph, StageInput, build_job_graph
from flowsql.runtime.operators.batches import conform
from flowsql.runtime.parallel.plan_codec import dumps

if TYPE_CHECKING:
    from flowsql.runtime.parallel.streaming_run import ParallelStreamingRun

TASK_KIND = "flowsql.runtime.parallel.stage_task:run_stage"
STREAMING_TASK_KIND = "flowsql.runtime.parallel.streaming_stage:run_streaming_stage"
_POLL_S = 0.1


class ParallelRunner:
    """Executes plans with ``parallelism`` subtasks per parallel stage."""

    def __init__(self) -> None:
        self._cluster: MiniCluster | None = None
        self._server: ChannelServer | None = None
        self._names = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def worker_pids(self) -> list[int]:
        return self._cluster.pids if self._cluster is not None else []

    def execute(self, plan: PhysicalPlan, settings: dict[str, str],
                parallelism: int) -> pa.Table:
        """Run ``plan`` (exchanges placed, root on one subtask) to completion."""
        graph = build_job_graph(plan, parallelism)
        if graph.root.parallelism != 1:
            raise ExecutionError("the root of a parallel plan must run on one subtask "
                                 "(a gather exchange is missing)")
        with self._lock:  # one job at a time: a session runs its statements in order
            cluster, server = self._start(parallelism)
            host, port = server.address
            tasks, edges, names = deployment(
                graph, settings, cluster,
                {"channel": f"result-{next(self._names)}", "host": host, "port": port})
            channels = register_results(server, names, settings)
            try:
                job = cluster.submit(tasks, edges, settings)
                batches = list(receive_results(job, channels))
            finally:
                unregister_results(server, channels)
        return _table(plan, batches)

    def stream(self, plan: PhysicalPlan, settings: dict[str, str], parallelism: int
               ) -> ParallelStreamingRun:
        """A streaming run of ``plan`` on this runner's cluster; it starts when its
        ``batches`` are iterated (see :class:`ParallelStreamingRun`)."""
        from flowsql.runtime.parallel.streaming_run import ParallelStreamingRun

        return ParallelStreamingRun(self, plan, settings, parallelism)

    def reserve(self, parallelism: int) -> tuple[MiniCluster, ChannelServer, str]:
        """The cluster (started or resized to ``parallelism`` workers), the result server
        and a fresh result channel name, for a job that runs beside others (streaming)."""
        with self._lock:
            cluster, server = self._start(parallelism)
            return cluster, server, f"result-{next(self._names)}"

    def _start(self, parallelism: int) -> tuple[MiniCluster, ChannelServer]:
        if self._cluster is not None and len(self._cluster.workers) != parallelism:
            self._cluster.close()
            self._cluster = None
        if self._cluster is None or any(w.lost for w in self._cluster.workers):
            if self._cluster is not None:
                self._cluster.close()
            self._cluster = MiniCluster(parallelism)
        if self._server is None:
            self._server = ChannelServer()
        return self._cluster, self._server

    def close(self) -> None:
        """Stop the workers and the result server; idempotent."""
        with self._lock:
            if self._cluster is not None:
                self._cluster.close()
                self._cluster = None
            if self._server is not None:
                self._server.close()
                self._server = None


def deployment(graph: JobGraph, settings: dict[str, str], cluster: MiniCluster,
               result: dict[str, object], kind: str = TASK_KIND
               ) -> tuple[list[TaskSpec], list[EdgeSpec], list[str]]:
    """One TaskSpec per stage subtask, one EdgeSpec per (sender, receiver) pair, and the
    names of the result channels the coordinator must register.

    Edges are listed by job edge, then sending subtask, then receiving subtask: a task's
    input channels are then grouped by edge in edge order and its output channels are in
    receiver order, which is what ``stage_task`` relies on.

    ``result`` names the coordinator's channel (``channel``, ``host``, ``port``). When the
    root stage would only forward a gather (its plan is the exchange input alone), it is
    not deployed: the subtasks feeding it send straight to the coordinator, one channel
    each (``<channel>-<subtask>``), which spares every result row a hop."""
    workers = len(cluster.workers)
    max_parallelism = SettingValues(settings).integer("max_parallelism")
    skipped = _forwarding_root(graph)
    tasks: list[TaskSpec] = []
    channels: list[str] = []
    for stage in graph.stages:
        if skipped is not None and stage.id == graph.root.id:
            continue
        output = None
        to_result = stage.output is None or stage.output == skipped
        if not to_result:
            edge = graph.edges[stage.output]  # type: ignore[index]
            output = {"kind": edge.kind, "keys": dumps(edge.keys),
                      "max_parallelism": max_parallelism}
        inputs = [[e, graph.stages[graph.edges[e].source].parallelism] for e in stage.inputs]
        plan = dumps(stage.plan)
        for subtask in range(stage.parallelism):
            target = None
            if to_result:
                name = (f"{result['channel']}-{subtask}" if skipped is not None
                        else str(result["channel"]))
                target = {**result, "channel": name}
                channels.append(name)
            config = {"plan": plan, "stage": stage.id, "parallelism": stage.parallelism,
                      "inputs": inputs, "output": output, "result": target}
            tasks.append(TaskSpec(stage.name, kind, subtask, config, subtask % workers))
    edges = [EdgeSpec(f"{graph.stages[e.source].name}[{s}]",
                      f"{graph.stages[e.target].name}[{t}]")
             for e in graph.edges if e.id != skipped
             for s in range(graph.stages[e.source].parallelism)
             for t in range(graph.stages[e.target].parallelism)]
    return tasks, edges, channels


def _forwarding_root(graph: JobGraph) -> int | None:
    """The gather edge into a root stage that does nothing but forward it, if any."""
    plan = graph.root.plan
    if isinstance(plan, StageInput) and graph.edges[plan.edge].kind == "gather":
        return plan.edge
    return None


def register_results(server: ChannelServer, names: list[str], settings: dict[str, str]
                     ) -> list[RemoteInputChannel]:
    """The coordinator's result channels, registered before the job is submitted."""
    credits = ChannelSettings.from_settings(settings).credits
    channels = [RemoteInputChannel(name, credits) for name in names]
    for channel in channels:
        server.register(channel)
    return channels


def unregister_results(server: ChannelServer, channels: list[RemoteInputChannel]) -> None:
    for channel in channels:
        channel.abort("the query ended")
        server.unregister(channel.name)


def receive_results(job: Job, channels: list[RemoteInputChannel],
                    cancelled: threading.Event | None = None) -> Iterator[pa.RecordBatch]:
    """The result batches as they arrive (each sending subtask's in its order) until every
    channel ended; stops early, cancelling the job, once ``cancelled`` is set. A failed job
    raises its error; a consumer that stops reading cancels the job."""
    gate = InputGate(channels)
    try:
        while not gate.finished:
            if cancelled is not None and cancelled.is_set():
                job.cancel()
                return
            if job.error is not None:
                raise job.error
            item = gate.next(timeout=_POLL_S)
            if item is not None and isinstance(item[1], pa.RecordBatch):
                yield item[1]
    except ChannelError as exc:
        job.result(SYMPTOM_GRACE_S + 2)  # raises the root cause when there is one
        raise ExecutionError(f"the query's result channel broke: {exc}") from exc
    except BaseException:
        job.cancel()
        raise
    job.result()


def _table(plan: PhysicalPlan, batches: list[pa.RecordBatch]) -> pa.Table:
    """The result as the single-process executor builds it: named and typed by the plan."""
    schema = to_arrow_schema(plan.schema)
    if not plan.schema:
        rows = sum(b.num_rows for b in batches)
        return pa.Table.from_batches([pa.record_batch([pa.nulls(rows)], names=["_"]).select([])])
    return pa.Table.from_batches(
        [pa.RecordBatch.from_arrays([conform(c, f.type) for c, f in zip(b.columns, schema)],
                                    schema=schema) for b in batches], schema=schema)
