"""A batch statement set run in this process: its INSERTs side by side, one thread each.

The batch executor pulls one input to its end before the next, so run as one plan the
INSERTs of a :class:`StatementSetExec` would run one after the other and every row of a
shared table would wait in memory for the later ones. Here each INSERT's sink plan runs in
its own thread with the batch executor, and each shared table is read through a
:class:`ConcurrentScanTee` with bounded queues: the INSERTs consume the read together
(pipelined), and an INSERT that does not take its rows yet (its hash join still reads the
other side) holds the read back instead of making it buffer without bound. Blocking
operators (sort, hash aggregate, join build) spill as usual; each INSERT gets an equal
share of ``execution.memory-budget``, so together they stay within it.

The first INSERT that fails fails the run: the others are stopped at their next read of a
shared table (``cancel`` does the same) and the run raises that first error.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from flowsql.planner.config.settings import SettingValues
from flowsql.planner.physical import PhysicalPlan
from flowsql.planner.physical_statement_set import ScanGroup, SharedScanExec, StatementSetExec
from flowsql.runtime.executor import execute_batches
from flowsql.runtime.operators.source.concurrent_scan_tee import ConcurrentScanTee
from flowsql.runtime.operators.source.shared_scan import use_tee

__all__ = ["ConcurrentStatementSetRun", "SHARED_QUEUE_BATCHES"]

#: batches that may wait for each leaf of a shared read
SHARED_QUEUE_BATCHES = 4


class ConcurrentStatementSetRun:
    """A run (``runtime.streaming.job.Run``) of a batch statement set; see the module
    docstring."""

    def __init__(self, plan: StatementSetExec, settings: dict[str, str]) -> None:
        self.plan = plan
        self._settings = settings
        self._stop = threading.Event()
        self._cancelled = False
        self.tees: dict[str, ConcurrentScanTee] = {}

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Runs every INSERT to its end; yields nothing (sinks emit no rows)."""
        sinks = self.plan.sinks
        budget = SettingValues(self._settings).memory_size("execution.memory-budget")
        share = {**self._settings,
                 "execution.memory-budget": str(max(1, budget // max(1, len(sinks))))}
        self._stop = threading.Event()
        for group in _groups(self.plan):
            tee = ConcurrentScanTee(group, SHARED_QUEUE_BATCHES, self._stop)
            use_tee(group, tee)
            self.tees[group.scan.table.name] = tee
        errors: list[BaseException] = []

        def run(sink: PhysicalPlan) -> None:
            try:
                for _ in execute_batches(sink, share):
                    pass
            except BaseException as exc:  # reported by the run, after the others stopped
                if not self._stop.is_set():
                    errors.append(exc)
                self._stop.set()

        threads = [threading.Thread(target=run, args=(sink,), daemon=True,
                                    name=f"statement-set insert {i + 1}")
                   for i, sink in enumerate(sinks)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        yield from ()

    def cancel(self) -> None:
        self._cancelled = True
        self._stop.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def metrics(self) -> list[dict[str, Any]]:
        """Per shared table: the rows and batches its one read produced."""
        return [{"operator": f"shared read of {name}", "records_out": tee.rows_read,
                 "batches": tee.batches_read} for name, tee in self.tees.items()]


def _groups(plan: PhysicalPlan) -> list[ScanGroup]:
    found: dict[ScanGroup, None] = {}

    def visit(node: PhysicalPlan) -> None:
        if isinstance(node, SharedScanExec):
            found[node.group] = None
        for child in node.inputs:
            visit(child)

    visit(plan)
    return list(found)
