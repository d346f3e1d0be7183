"""A bounded plan with exchanges run as a background job on the mini-cluster: a batch
statement set at parallelism above 1 (its shared reads are stages with several output
edges, ``runtime.jobgraph``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from flowsql.planner.explain_analyze import OperatorActuals
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.jobgraph import build_job_graph
from flowsql.runtime.parallel.runner import ParallelRunner
from flowsql.runtime.registry import describe

__all__ = ["ParallelBoundedRun"]


class ParallelBoundedRun:
    """A run (``runtime.streaming.job.Run``) of ``plan`` on ``runner``'s workers.
    ``metrics`` are known once the run ended: per operator (labelled as the streaming
    runs label theirs: its node, its operator id and its stage), the rows it emitted
    summed over its subtasks."""

    def __init__(self, runner: ParallelRunner, plan: PhysicalPlan, settings: dict[str, str],
                 parallelism: int) -> None:
        self.plan = plan
        self._runner = runner
        self._settings = settings
        self._parallelism = parallelism
        self._cancelled = threading.Event()
        self._actuals: dict[str, OperatorActuals] = {}

    def batches(self) -> Iterator[pa.RecordBatch]:
        table, self._actuals = self._runner.execute_profiled(
            self.plan, self._settings, self._parallelism, self._cancelled)
        yield from table.to_batches()

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def metrics(self) -> list[dict[str, Any]]:
        if not self._actuals:
            return []
        labels = {}
        for stage in build_job_graph(self.plan, self._parallelism).stages:
            for node, operator_id in zip(_pre_order(stage.plan), stage.operator_ids):
                labels[operator_id] = f"{describe(node)} [{operator_id}] in {stage.name}"
        return [{"operator": labels.get(name, name), "records_out": actual.rows}
                for name, actual in self._actuals.items()]


def _pre_order(plan: PhysicalPlan) -> Iterator[PhysicalPlan]:
    yield plan
    for child in plan.inputs:
        yield from _pre_order(child)
