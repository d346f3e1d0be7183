"""Live progress of a bounded run: per operator, the rows emitted so far and whether it
has finished, counted while the run goes on and read from another thread.

Two halves:

* :class:`ProgressCounters` lives where operators run (the session's process at
  parallelism 1, each subtask's worker above). The executor and the stage task wrap each
  node's batch generator in :meth:`ProgressCounters.counted` when a run is tracked, and
  pay nothing otherwise. Counters are plain ints updated by the running thread; a reader
  may see a figure a batch old, never a wrong one.
* :class:`ProgressTracker` lives in the session's process and turns counters into a
  :class:`~flowsql.planner.query_progress.QueryProgress`. At parallelism 1 it reads its
  own counters; at parallelism > 1 the parallel runner points it at the subtasks'
  reports (:meth:`ProgressTracker.follow`) -- each subtask sends ``report()`` every
  ``REPORT_S`` seconds through the cluster's task-progress messages, and once more in its
  result.

Operators are named by operator id (``planner.operator_ids``), which names a node the same
in every process; a stage's StageInput carries the id of the exchange it replaces, so an
exchange counts as finished when its receiving subtasks have read their input to the end.
An operator closed early (the inputs of a satisfied LIMIT) counts as finished too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any

import pyarrow as pa

from flowsql.planner.operator_ids import node_operator_ids
from flowsql.planner.physical import PhysicalPlan, TableScanExec
from flowsql.planner.query_progress import QueryProgress
from flowsql.runtime.operator_profile import preorder

__all__ = ["REPORT_S", "ProgressCounters", "ProgressTracker", "subtask_reports"]

#: seconds between two progress reports of a tracked subtask
REPORT_S = 0.25

Batches = Generator[pa.RecordBatch, None, None]
#: one process's figures: operator id -> [rows emitted, 1 if finished else 0] (JSON-able)
Report = Mapping[str, list[int]]


class ProgressCounters:
    """The rows and the end of every operator run in one process."""

    def __init__(self) -> None:
        self._operators: dict[str, list[int]] = {}

    def counted(self, operator_id: str, batches: Batches) -> Batches:
        """``batches`` unchanged, counting their rows under ``operator_id``; the operator
        is finished when its generator ends or is closed."""
        counts = self._operators.setdefault(operator_id, [0, 0])
        try:
            for batch in batches:
                counts[0] += batch.num_rows
                yield batch
        finally:
            batches.close()
            counts[1] = 1

    def report(self) -> dict[str, list[int]]:
        """A copy of the figures, safe to send while the run goes on."""
        return {name: list(counts) for name, counts in list(self._operators.items())}


class ProgressTracker:
    """The progress of one run of ``plan``, as the session's process sees it."""

    def __init__(self, plan: PhysicalPlan) -> None:
        names = node_operator_ids(plan)
        nodes = preorder(plan)
        #: scans' operator ids and the rows the optimizer expects each to emit
        self._scans = {names[id(n)]: float(n.est_rows) for n in nodes
                       if isinstance(n, TableScanExec)}
        #: subtasks running each operator: one each until ``follow`` says otherwise
        self._subtasks: dict[str, int] = {names[id(n)]: 1 for n in nodes}
        self.counters = ProgressCounters()
        self._reports: Callable[[], Iterable[Report]] = lambda: [self.counters.report()]

    def follow(self, subtasks: Mapping[str, int],
               reports: Callable[[], Iterable[Report]]) -> None:
        """Read the figures from other processes from now on: ``subtasks`` is how many
        subtasks run each operator id of the deployed job, ``reports`` returns the latest
        report of every subtask that sent one."""
        self._subtasks = dict(subtasks)
        self._reports = reports

    def snapshot(self) -> QueryProgress:
        rows: Counter[str] = Counter()
        finished: Counter[str] = Counter()
        for report in self._reports():
            for name, (count, done) in report.items():
                rows[name] += int(count)
                finished[name] += int(done)
        done = sum(1 for name, subtasks in self._subtasks.items()
                   if finished[name] >= subtasks)
        return QueryProgress(
            operators_done=done, operators=len(self._subtasks),
            rows_read=sum(rows[name] for name in self._scans),
            rows_estimated=sum(self._scans.values()) if self._scans else None)


def subtask_reports(results: Mapping[str, Mapping[str, Any]],
                    progress: Mapping[str, Mapping[str, Any]]) -> list[Report]:
    """Every subtask's latest figures: its result's once it finished, else its last
    progress report."""
    latest = {**progress, **results}
    return [entry["progress"] for entry in list(latest.values()) if "progress" in entry]
