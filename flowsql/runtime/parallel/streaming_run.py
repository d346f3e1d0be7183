"""A streaming plan with exchanges run on the mini-cluster, seen from the session.

It offers what the single-process :class:`StreamingRun` offers, so a continuous job
(``INSERT INTO``) and a streamed SELECT do not care where they run: ``batches()`` submits
the job and yields the root stage's output as it arrives (a changelog when the result is
updating), ``cancel()`` stops it from another thread, and ``metrics()`` gives per operator
the records in/out, the current watermark and the operators' own counters, combined over
its subtasks (counters summed; the watermark is the smallest, the event time the whole
operator has reached). While the job runs the metrics come from the subtasks' periodic
reports, so they may be up to half a second old; after it ends they are exact.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any, Protocol

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.channels import ChannelServer
from flowsql.runtime.cluster import Job, MiniCluster
from flowsql.runtime.jobgraph import build_job_graph
from flowsql.runtime.parallel.result_channels import (
    receive_results,
    register_results,
    unregister_results,
)
from flowsql.runtime.parallel.stage_deployment import STREAMING_TASK_KIND, deployment

_SUBTASK = re.compile(r" in subtask \d+ of (\d+) of (stage-\d+)$")


class ClusterReservation(Protocol):
    """What a run needs of its runner (``ParallelRunner.reserve``)."""

    def reserve(self, parallelism: int) -> tuple[MiniCluster, ChannelServer, str]: ...


class ParallelStreamingRun:
    """One run of a streaming plan on ``runner``'s cluster (see the module docstring)."""

    def __init__(self, runner: ClusterReservation, plan: PhysicalPlan, settings: dict[str, str],
                 parallelism: int) -> None:
        self.plan = plan
        self._runner = runner
        self._settings = settings
        self._parallelism = parallelism
        self._graph = build_job_graph(plan, parallelism)
        if self._graph.root.parallelism != 1:
            raise ExecutionError("the root of a parallel plan must run on one subtask "
                                 "(a gather exchange is missing)")
        self._cancelled = threading.Event()
        self._job: Job | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self) -> None:
        """Stop at the next poll (from any thread); ``batches`` then ends."""
        self._cancelled.set()

    def batches(self) -> Iterator[pa.RecordBatch]:
        cluster, server, name = self._runner.reserve(self._parallelism)
        host, port = server.address
        tasks, edges, names = deployment(self._graph, self._settings, cluster,
                                         {"channel": name, "host": host, "port": port},
                                         STREAMING_TASK_KIND)
        channels = register_results(server, names, self._settings)
        try:
            self._job = cluster.submit(tasks, edges, self._settings)
            yield from receive_results(self._job, channels, self._cancelled)
        finally:
            unregister_results(server, channels)

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
