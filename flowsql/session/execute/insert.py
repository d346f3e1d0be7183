"""INSERT INTO: plan the query into a sink on the target table and submit it as a job."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowsql.errors import CatalogError, PlanError
from flowsql.planner.catalog import TableEntry
from flowsql.planner.physical import PhysicalPlan
from flowsql.session.execute.planning import explain_text, plan_statement
from flowsql.session.execute.query import streaming_run
from flowsql.session.result import Result
from flowsql.sql.statement_parser import InsertStatement, QueryStatement

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["execute_insert", "sink_plan"]


def execute_insert(session: Session, statement: InsertStatement) -> Result:
    """``INSERT INTO table query``: submits a job and returns its handle at once."""
    from flowsql.runtime.checkpoint.compatibility import report_table, report_text
    from flowsql.runtime.checkpoint.restore_check import check_restore
    from flowsql.runtime.streaming.job import Job

    entry = session.catalog.get(statement.table)
    if not isinstance(entry, TableEntry):
        problem = "is a view" if entry is not None else "does not exist"
        raise CatalogError(f"INSERT INTO {statement.table}: table '{statement.table}' "
                           f"{problem}")
    query = QueryStatement(statement.text, statement.start, statement.end, ast=statement.ast)
    logical, optimized, physical, info = plan_statement(
        session, query, sink=lambda plan: sink_plan(plan, entry, statement.columns))
    verdicts = None
    if info is not None:
        verdicts = check_restore(physical, session.settings)
        run: Any = streaming_run(session, physical)
    else:
        run = _bounded_run(session, physical)
    job = Job(f"INSERT INTO {entry.name}", run)
    session.jobs.append(job)
    message = f"Job {job.id} submitted: INSERT INTO {entry.name}"
    if verdicts is not None:
        message += (f"\nstarting from savepoint "
                    f"{session.settings.get('execution.savepoint.path')}:\n"
                    f"{report_text(verdicts)}")
    return Result("job", message=message,
                  plan_text=explain_text(logical, optimized, physical,
                                         streaming=info is not None), job=job,
                  restore_report=None if verdicts is None else report_table(verdicts))


def _bounded_run(session: Session, physical: PhysicalPlan) -> Any:
    """A batch INSERT's run: on the session's workers when its plan has exchanges (the
    single-process executor has no exchanges), else in this process."""
    from flowsql.optimizer.distribution import parallelism
    from flowsql.optimizer.search import runs_on_workers
    from flowsql.runtime.streaming.job import BoundedRun

    settings = dict(session.settings)
    workers = parallelism(settings)
    if workers > 1 and runs_on_workers(physical):
        from flowsql.runtime.parallel import ParallelRunner
        from flowsql.runtime.parallel.bounded_run import ParallelBoundedRun

        if session.parallel_runner is None:
            session.parallel_runner = ParallelRunner()
        return ParallelBoundedRun(session.parallel_runner, physical, settings, workers)
    return BoundedRun(physical, settings)


def sink_plan(plan: PhysicalPlan, table: TableEntry, columns: tuple[str, ...] | None
              ) -> PhysicalPlan:
    """``plan`` cast to ``table``'s columns (all, or the named ones with NULL for the
    rest) and written by a SinkExec."""
    from flowsql.planner.expressions import Cast, Expr, Literal
    from flowsql.planner.physical import ProjectExec
    from flowsql.planner.physical_streaming import SinkExec
    from flowsql.planner.schema import Field

    writable = table.writable_schema  # VIRTUAL metadata columns are read-only
    names = [f.name for f in writable]
    targets = list(columns) if columns is not None else names
    lowered = {n.lower(): n for n in names}
    unknown = [c for c in targets if c.lower() not in lowered]
    if unknown:
        raise CatalogError(f"INSERT INTO {table.name}: no column {unknown[0]} (columns: "
                           f"{', '.join(names)})")
    if len(targets) != len(plan.schema):
        raise PlanError(f"INSERT INTO {table.name}: the query has {len(plan.schema)} "
                        f"columns, the target {len(targets)} ({', '.join(targets)})")
    by_target = {lowered[c.lower()]: f for c, f in zip(targets, plan.schema)}
    exprs: list[Expr] = []
    for field in writable:
        source = by_target.get(field.name)
        if source is None:
            exprs.append(Literal(None, field.type))
        elif source.dtype.equals(field.type):
            exprs.append(source.ref())
        else:
            exprs.append(Cast(source.ref(), field.type))
    fields = tuple(Field.fresh(f.name, f.type) for f in writable)
    project = ProjectExec(plan, tuple(exprs), fields, plan.est_rows)
    return SinkExec(project, table, plan.est_rows)
