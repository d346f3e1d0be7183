"""Per-operator rows, own time and spilled bytes of one bounded run, for EXPLAIN ANALYZE.

A bounded run pulls one generator of batches per plan node (:mod:`flowsql.runtime.pull_loop`);
an operator's work happens inside its generator's ``next`` calls, and its inputs' work
happens inside those calls too, because the operator pulls its inputs itself. So wrapping
each node's generator (:meth:`Profile.timed`) measures the node's *inclusive* time, and its
own time is that minus the inclusive time of its inputs -- no timer in the operators, and
nothing at all when a run is not profiled: the executor and the stage task wrap a generator
only when asked to.

Figures are keyed by operator id (``planner.operator_ids``), the name a node has in every
process: a parallel run's subtasks report theirs (:meth:`Profile.report`, JSON-able) and the
coordinator merges them (:func:`merge_reports`: rows summed, own time the slowest subtask's).

Spilling is read from the operator's own metrics (``spilled_bytes``, ``spilled_runs``, which
:class:`~flowsql.runtime.spill.SpillWriter` counts): :meth:`Profile.timed` keeps a reference
to the operator context's metrics dict and reads it when the figures are asked for; subtasks'
spilled bytes and runs are summed.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from flowsql.planner.explain_analyze import OperatorActuals
from flowsql.planner.physical import PhysicalPlan

Batches = Generator[pa.RecordBatch, None, None]


@dataclass
class _Timer:
    rows: int = 0
    inclusive: float = 0.0
    #: the operator's metrics (its context's dict), where spilling is counted
    metrics: Mapping[str, Any] | None = None

    def spilled(self) -> tuple[int, int]:
        metrics = self.metrics or {}
        return int(metrics.get("spilled_bytes", 0)), int(metrics.get("spilled_runs", 0))


class Profile:
    """The timers of one run (of one subtask, at parallelism > 1), per plan node."""

    def __init__(self) -> None:
        self._timers: dict[int, _Timer] = {}

    def timed(self, node: PhysicalPlan, batches: Batches,
              metrics: Mapping[str, Any] | None = None) -> Batches:
        """``batches`` unchanged, counting their rows and the time spent producing them
        (including closing the generator, where an operator's ``close`` runs). The node
        counts as run from here on, even if nobody pulls it (0 rows). ``metrics`` is the
        operator's metrics dict, read for its spilled bytes and runs."""
        timer = self._timers.setdefault(id(node), _Timer())
        timer.metrics = metrics
        return _timed(timer, batches)

    def actuals(self, plan: PhysicalPlan, names: Mapping[int, str]
                ) -> dict[str, OperatorActuals]:
        """Rows, own seconds and spilling of every node of ``plan`` that ran, by
        ``names[id(node)]`` (the node's operator id). Own time is clamped at 0 against
        clock jitter."""
        out: dict[str, OperatorActuals] = {}

        def visit(node: PhysicalPlan) -> None:
            for child in node.inputs:
                visit(child)
            timer = self._timers.get(id(node))
            if timer is None:
                return
            inputs = sum(self._timers[id(c)].inclusive for c in node.inputs
                         if id(c) in self._timers)
            out[names[id(node)]] = OperatorActuals(timer.rows, max(0.0, timer.inclusive - inputs),
                                                   *timer.spilled())

        visit(plan)
        return out

    def report(self, plan: PhysicalPlan, operator_ids: Iterable[str]) -> dict[str, list[Any]]:
        """``actuals`` as JSON (operator id -> [rows, seconds, spilled bytes, spilled runs])
        for a stage plan whose nodes are named, in pre-order, by ``operator_ids`` (the
        stage's deployment config)."""
        names = dict(zip((id(n) for n in preorder(plan)), operator_ids))
        return {name: [a.rows, a.seconds, a.spilled_bytes, a.spilled_runs]
                for name, a in self.actuals(plan, names).items()}


def merge_reports(reports: Iterable[Mapping[str, list[Any]]]) -> dict[str, OperatorActuals]:
    """Subtask reports merged per operator: rows summed, seconds the maximum, spilled
    bytes and runs summed."""
    rows: dict[str, int] = {}
    seconds: dict[str, float] = {}
    spilled: dict[str, tuple[int, int]] = {}
    for report in reports:
        for name, (count, spent, *spill) in report.items():
            rows[name] = rows.get(name, 0) + int(count)
            seconds[name] = max(seconds.get(name, 0.0), float(spent))
            nbytes, runs = spilled.get(name, (0, 0))
            more_bytes, more_runs = (int(spill[0]), int(spill[1])) if spill else (0, 0)
            spilled[name] = (nbytes + more_bytes, runs + more_runs)
    return {name: OperatorActuals(rows[name], seconds[name], *spilled[name]) for name in rows}


def _timed(timer: _Timer, batches: Batches) -> Batches:
    clock = time.perf_counter
    try:
        while True:
            started = clock()
            try:
                batch = next(batches)
            except StopIteration:
                return
            finally:
                timer.inclusive += clock() - started
            timer.rows += batch.num_rows
            yield batch
    finally:
        started = clock()
        batches.close()
        timer.inclusive += clock() - started


def preorder(plan: PhysicalPlan) -> list[PhysicalPlan]:
    """The plan's nodes, each parent before its inputs (the order of a stage's
    ``operator_ids``)."""
    nodes = [plan]
    for child in plan.inputs:
        nodes += preorder(child)
    return nodes
