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
    from flowsql.optimizer.search import runs_on_workers
    from flowsql.runtime.streaming.job import Job

    settings = dict(session.settings)
    workers = parallelism(settings)
    sinks, streaming, targets = _plan_inserts(session, statement)
    on_workers = [runs_on_workers(sink) for sink in sinks]
    if not streaming and workers > 1 and any(on_workers) and not all(on_workers):
        # one job at one parallelism: the INSERTs the search put on one subtask in the
        # session are planned again with exchanges, as the others are
        sinks, _, _ = _plan_inserts(session, statement,
                                    {"optimizer.small-query-on-one-subtask": "false"})
    root = StatementSetExec(tuple(share_scans(sinks)))
    name = f"STATEMENT SET (INSERT INTO {', '.join(targets)})"
    job = Job(name, _run(session, root, settings, streaming, workers))
    session.jobs.append(job)
    return Result("job", message=f"Job {job.id} submitted: {name}", job=job)


def _plan_inserts(session: Session, statement: StatementSetStatement,
                  overrides: dict[str, str] | None = None
                  ) -> tuple[list[PhysicalPlan], bool, list[str]]:
    """Every INSERT's sink plan, whether they run in streaming mode, and their targets;
    ``overrides`` are settings in force while planning."""
    saved = dict(session.settings)
    session.settings.update(overrides or {})
    try:
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
    finally:
        session.settings.clear()
        session.settings.update(saved)
    return sinks, modes == {True}, targets


def _run(session: Session, root: StatementSetExec, settings: dict[str, str],
         streaming: bool, workers: int) -> Any:
    """The run of a statement set's plan. Streaming: in this process (the shared reads
    are tees polled with the other sources), or as a job graph on the session's workers
    when the parallelism is above 1 or the job checkpoints (the shared reads are stages
    with one output edge per reader, so barriers flow through them). Batch: the INSERTs
    in threads of this process reading the shared tables together, or on the workers when
    the plans have exchanges."""
    from flowsql.optimizer.search import runs_on_workers
    from flowsql.session.execute.query import recovers

    if streaming and (workers > 1 or recovers(settings)):
        return _runner(session).stream(root, settings, workers)
    if streaming:
        from flowsql.runtime.streaming.executor import StreamingRun

        return StreamingRun(root, settings)
    if workers > 1 and runs_on_workers(root):
        from flowsql.runtime.parallel.bounded_run import ParallelBoundedRun

        return ParallelBoundedRun(_runner(session), root, settings, workers)
    from flowsql.runtime.statement_set_run import ConcurrentStatementSetRun

    return ConcurrentStatementSetRun(root, settings)


def _runner(session: Session) -> Any:
    from flowsql.runtime.parallel import ParallelRunner

    if session.parallel_runner is None:
        session.parallel_runner = ParallelRunner()
    return session.parallel_runner


def _target(session: Session, insert: InsertStatement) -> TableEntry:
    entry = session.catalog.get(insert.table)
    if not isinstance(entry, TableEntry):
        problem = "is a view" if entry is not None else "does not exist"
        raise CatalogError(f"INSERT INTO {insert.table}: table '{insert.table}' {problem}")
    return entry


def share_scans(plans: list[PhysicalPlan]) -> list[PhysicalPlan]:
    """``plans`` with every scan of a table that several of them read replaced by a leaf
    of one shared read of that table: the union of the columns the scans read, no pushed
    filters (each leaf filters its own rows again, as the scan did).

    A table is shared among the plans that read it once: a plan reading it twice (a
    self-join) keeps its own reads, since one operator waiting for one of them to end
    while the other's rows pile up would hold the shared read back for good (the runs
    bound what waits for each reader). Scans that generate watermarks themselves keep
    their own read."""
    per_plan = [Counter(s.table.name for s in _scans(plan) if s.watermark is None)
                for plan in plans]
    once = [{name for name, n in counts.items() if n == 1} for counts in per_plan]
    scans = [s for plan, names in zip(plans, once) for s in _scans(plan)
             if s.watermark is None and s.table.name in names]
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

    def rewrite(node: PhysicalPlan, shared: set[str]) -> PhysicalPlan:
        if isinstance(node, TableScanExec) and node.watermark is None and \
                node.table.name in groups and node.table.name in shared:
            group = groups[node.table.name]
            leaf: PhysicalPlan = SharedScanExec(group, taken[node.table.name], node.fields,
                                                node.est_rows)
            taken[node.table.name] += 1
            predicate = conjoin(node.filters)
            return leaf if predicate is None else FilterExec(leaf, predicate, node.est_rows)
        if not node.inputs:
            return node
        return node.with_inputs(tuple(rewrite(child, shared) for child in node.inputs))

    return [rewrite(plan, names) for plan, names in zip(plans, once)]


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
