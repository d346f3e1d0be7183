"""Physical nodes of a statement set: several INSERTs run as one job (Flink's statement
sets, ``EXECUTE STATEMENT SET BEGIN ... END``).

The runtimes execute trees, so a statement set is one tree: a :class:`StatementSetExec`
root over the INSERTs' sink plans. A table read by several of them is read once: each of
its scans becomes a :class:`SharedScanExec` leaf, and all leaves of one table name the same
``shared`` scan (the union of the columns they read). At run time one reader feeds every
leaf of the group (``runtime.operators.source.shared_scan``), so the source's rows are read
once and handed to each INSERT.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from flowsql.planner.physical import PhysicalPlan, TableScanExec
from flowsql.planner.schema import Schema


@dataclass(frozen=True, eq=False)
class ScanGroup:
    """The leaves reading one table in one statement set: ``scan`` is the one read (all
    columns any leaf needs, no pushed filters) and ``consumers`` how many leaves share it.
    Compared by identity: the runtime keeps one reader per group and run."""

    scan: TableScanExec
    consumers: int


@dataclass(frozen=True, eq=False)
class SharedScanExec(PhysicalPlan):
    """A leaf reading ``fields`` (a subset of ``group.scan.fields``, matched by name) from
    the shared read of ``group``; ``index`` tells it apart from the group's other leaves."""

    group: ScanGroup
    index: int
    fields: Schema
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.fields


@dataclass(frozen=True, eq=False)
class StatementSetExec(PhysicalPlan):
    """Runs every input (a sink plan each) to its end; emits nothing."""

    sinks: tuple[PhysicalPlan, ...]
    est_rows: float = 0.0

    @property
    def schema(self) -> Schema:
        return ()

    @property
    def inputs(self) -> tuple[PhysicalPlan, ...]:
        return self.sinks

    def with_inputs(self, inputs: tuple[PhysicalPlan, ...]) -> PhysicalPlan:
        return replace(self, sinks=tuple(inputs))
