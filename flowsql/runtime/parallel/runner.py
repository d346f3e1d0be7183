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
from collections import Counter
from dataclasses import replace
from typing import Any

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.explain_analyze import OperatorActuals
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.batch_progress import ProgressTracker, subtask_reports
from flowsql.runtime.channels import ChannelServer
from flowsql.runtime.cluster import MiniCluster
from flowsql.runtime.jobgraph import build_job_graph
from flowsql.runtime.operator_profile import merge_reports
from flowsql.runtime.parallel.result_channels import (
    receive_results,
    register_results,
    unregister_results,
)
from flowsql.runtime.parallel.stage_deployment import deployment
from flowsql.runtime.parallel.streaming_run import ParallelStreamingRun
from flowsql.runtime.result_table import result_table


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
                parallelism: int, progress: ProgressTracker | None = None) -> pa.Table:
        """Run ``plan`` (exchanges placed, root on one subtask) to completion;
        ``progress`` (optional) follows the subtasks' reports while it runs."""
        return self._execute(plan, settings, parallelism, profile=False, progress=progress)[0]

    def execute_profiled(self, plan: PhysicalPlan, settings: dict[str, str],
                         parallelism: int, cancelled: threading.Event | None = None
                         ) -> tuple[pa.Table, dict[str, OperatorActuals]]:
        """``execute``, plus every operator's rows (summed over its subtasks) and own time
        (the slowest subtask's) by operator id, for EXPLAIN ANALYZE. Setting
        ``cancelled`` cancels the job; the table then holds what arrived before."""
        table, results = self._execute(plan, settings, parallelism, profile=True,
                                       cancelled=cancelled)
        return table, merge_reports(r["operators"] for r in results.values()
                                    if "operators" in r)

    def _execute(self, plan: PhysicalPlan, settings: dict[str, str], parallelism: int,
                 profile: bool, progress: ProgressTracker | None = None,
                 cancelled: threading.Event | None = None
                 ) -> tuple[pa.Table, dict[str, dict[str, Any]]]:
        """The result table and every task's result (by task id; none when ``cancelled``
        was set). An interrupt (Ctrl-C) while the result is received cancels the job on
        the workers."""
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
            if profile:
                tasks = [replace(t, config={**t.config, "profile": True}) for t in tasks]
            if progress is not None:
                tasks = [replace(t, config={**t.config, "progress": True}) for t in tasks]
            channels = register_results(server, names, settings)
            try:
                job = cluster.submit(tasks, edges, settings)
                if progress is not None:
                    progress.follow(Counter(name for t in tasks
                                            for name in t.config["operator_ids"]),
                                    lambda: subtask_reports(job.results, job.progress))
                try:
                    batches = list(receive_results(job, channels, cancelled))
                    results = ({} if cancelled is not None and cancelled.is_set()
                               else job.result())
                except KeyboardInterrupt:
                    job.cancel()
                    raise
            finally:
                unregister_results(server, channels)
        return result_table(plan, batches), results

    def stream(self, plan: PhysicalPlan, settings: dict[str, str], parallelism: int
               ) -> ParallelStreamingRun:
        """A streaming run of ``plan`` on this runner's cluster; it starts when its
        ``batches`` are iterated (see :class:`ParallelStreamingRun`)."""
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
        if self._cluster is None:
            self._cluster = MiniCluster(parallelism)
        elif any(w.lost for w in self._cluster.workers):
            self._cluster.replace_lost_workers()  # jobs on the other workers keep running
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
