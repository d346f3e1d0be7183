"""Statement sets: several INSERT INTO statements planned separately and run as one job
in which each table they share is read once (``planner.physical_statement_set``)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from flowsql.errors import CatalogError, PlanError
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import conjoin
from flowsql.planner.physical import FilterExec, PhysicalPlan, TableScanExec
from flowsql.planner.physical_statement_set import ScanGroup, SharedScanExec, StatementSetExec
from flowsql.session.execute.insert import sink_plan
from flowsql.session.execute.planning import plan_statement
from flowsql.session.result import Result
from flowsql.sql.statement_parser import InsertStatement, QueryStatement, StatementSetStatement

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["StatementSet", "execute_statement_set", "share_scans"]


def execute_statement_set(session: Session, statement: StatementSetStatement) -> Result:
    """Plan every INSERT, share the scans of the tables several of them read, and submit
    the whole as one job; returns its handle at once."""
    from flowsql.optimizer.distribution import parallelism
    from flowsql.runtime.streaming.job import BoundedRun, Job
    from flowsql.session.execute.query import recovers

    settings = dict(session.settings)
    if recovers(settings):
        raise PlanError("a statement set cannot run with checkpointing, a restart strategy "
                        "or a savepoint yet: run its INSERTs one by one")
    if parallelism(settings) > 1:
        raise PlanError("a statement set runs in this process, at parallelism 1: "
                        "SET 'parallelism.default' = '1' first")
    sinks: list[PhysicalPlan] = []
    modes: set[bool] = set()
    targets: list[str] = []
    for insert in statement.inserts:
        entry = _target(session, insert)
        query = QueryStatement(insert.text, insert.start, insert.end, ast=insert.ast)
        _, _, physical, info = plan_statement(
            session, query, sink=lambda plan, entry=entry, insert=insert: sink_plan(  # type: ignore[misc]
                plan, entry, insert.columns))
        sinks.append(physical)
        modes.add(info is not None)
        targets.append(entry.name)
    root = StatementSetExec(tuple(share_scans(sinks)))
    run: Any
    if modes == {True}:
        from flowsql.runtime.streaming.executor import StreamingRun

        run = StreamingRun(root, settings)
    else:
        run = BoundedRun(root, settings)
    name = f"STATEMENT SET (INSERT INTO {', '.join(targets)})"
    job = Job(name, run)
    session.jobs.append(job)
    return Result("job", message=f"Job {job.id} submitted: {name}", job=job)


def _target(session: Session, insert: InsertStatement) -> TableEntry:
    entry = session.catalog.get(insert.table)
    if not isinstance(entry, TableEntry):
        problem = "is a view" if entry is not None else "does not exist"
        raise CatalogError(f"INSERT INTO {insert.table}: table '{insert.table}' {problem}")
    return entry


def share_scans(plans: list[PhysicalPlan]) -> list[PhysicalPlan]:
    """``plans`` with every scan of a table read more than once replaced by a leaf of one
    shared read of that table: the union of the columns the scans read, no pushed filters
    (each leaf filters its own rows again, as the scan did). Scans that generate watermarks
    themselves keep their own read."""
    scans = [s for plan in plans for s in _scans(plan) if s.watermark is None]
    counts = Counter(s.table.name for s in scans)
    groups: dict[str, ScanGroup] = {}
    for name, count in counts.items():
        if count < 2:
            continue
        members = [s for s in scans if s.table.name == name]
        fields, seen = [], set()
        for scan in members:
            for f in scan.fields:
                if f.name not in seen:
                    seen.add(f.name)
                    fields.append(f)
        shared = TableScanExec(members[0].table, tuple(fields), (),
                               max(s.est_rows for s in members))
        groups[name] = ScanGroup(shared, count)
    taken: Counter[str] = Counter()

    def rewrite(node: PhysicalPlan) -> PhysicalPlan:
        if isinstance(node, TableScanExec) and node.watermark is None and \
                node.table.name in groups:
            group = groups[node.table.name]
            leaf: PhysicalPlan = SharedScanExec(group, taken[node.table.name], node.fields,
                                                node.est_rows)
            taken[node.table.name] += 1
            predicate = conjoin(node.filters)
            return leaf if predicate is None else FilterExec(leaf, predicate, node.est_rows)
        if not node.inputs:
            return node
        return node.with_inputs(tuple(rewrite(child) for child in node.inputs))

    return [rewrite(plan) for plan in plans]


def _scans(node: PhysicalPlan) -> list[TableScanExec]:
    if isinstance(node, TableScanExec):
        return [node]
    return [s for child in node.inputs for s in _scans(child)]


class StatementSet:
    """Flink's ``StatementSet`` for the Python API: ``add_insert_sql`` collects INSERT INTO
    statements, ``execute`` runs them as one job (``Session.statement_set()``)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._inserts: list[InsertStatement] = []

    def add_insert_sql(self, sql: str) -> StatementSet:
        """Add one INSERT INTO statement (parsed now: a syntax error is raised here)."""
        from flowsql.sql.statement_parser import parse_one

        statement = parse_one(sql)
        if not isinstance(statement, InsertStatement):
            raise PlanError(f"a statement set takes INSERT INTO statements, not: "
                            f"{statement.source[:40]}")
        self._inserts.append(statement)
        return self

    def execute(self) -> Result:
        """Submit the INSERTs added so far as one job (its handle in ``Result.job``)."""
        if not self._inserts:
            raise PlanError("the statement set has no INSERT INTO statement")
        first = self._inserts[0]
        statement = StatementSetStatement(first.text, first.start, first.end,
                                          inserts=tuple(self._inserts))
        return execute_statement_set(self._session, statement)
