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
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.channels import ChannelError, InputGate, RemoteInputChannel
from flowsql.runtime.cluster import Job
from flowsql.runtime.cluster.coordinator import SYMPTOM_GRACE_S
from flowsql.runtime.jobgraph import build_job_graph

if TYPE_CHECKING:
    from flowsql.runtime.parallel.runner import ParallelRunner

_POLL_S = 0.1
_SUBTASK = re.compile(r" in subtask \d+ of (\d+) of (stage-\d+)$")


class ParallelStreamingRun:
    """One run of a streaming plan on ``runner``'s cluster (see the module docstring)."""

    def __init__(self, runner: ParallelRunner, plan: PhysicalPlan, settings: dict[str, str],
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
        from flowsql.runtime.parallel.runner import (
            STREAMING_TASK_KIND,
            deployment,
            register_results,
            unregister_results,
        )

        runner = self._runner
        with runner._lock:  # only the submission: the job then runs beside others
            cluster, server = runner._start(self._parallelism)
            name = f"result-{next(runner._names)}"
        host, port = server.address
        tasks, edges, names = deployment(self._graph, self._settings, cluster,
                                         {"channel": name, "host": host, "port": port},
                                         STREAMING_TASK_KIND)
        channels = register_results(server, names, self._settings)
        try:
            job = self._job = cluster.submit(tasks, edges, self._settings)
            yield from self._receive(job, channels)
        finally:
            unregister_results(server, channels)

    def _receive(self, job: Job, channels: list[RemoteInputChannel]
                 ) -> Iterator[pa.RecordBatch]:
        gate = InputGate(channels)
        try:
            while not gate.finished:
                if self._cancelled.is_set():
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
            job.cancel()  # the consumer stopped reading (or failed): stop the job
            raise
        job.result()

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
