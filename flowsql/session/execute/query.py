"""SELECT: run a query's physical plan on the session's engine, or, in streaming mode,
return its changelog, which runs when it is read."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from flowsql.planner.physical import PhysicalPlan
from flowsql.planner.query_progress import ProgressSource
from flowsql.session.execute.planning import explain_text, plan_statement
from flowsql.session.result import Result
from flowsql.sql.statement_parser import QueryStatement

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["execute_query", "run_physical", "streaming_run"]


def execute_query(session: Session, statement: QueryStatement) -> Result:
    logical, optimized, physical, info = plan_statement(session, statement)
    if info is not None:
        from flowsql.runtime.checkpoint.restore_check import check_restore

        check_restore(physical, session.settings)
        return _stream_query(session, physical, info,
                             explain_text(logical, optimized, physical, streaming=True))
    started = time.perf_counter()
    table = run_physical(session, physical)
    elapsed = time.perf_counter() - started
    return Result("query", table=table,
                  plan_text=explain_text(logical, optimized, physical),
                  metrics={"seconds": elapsed})


def run_physical(session: Session, physical: PhysicalPlan) -> pa.Table:
    """Run a physical plan on the session's engine; with ``session.track_progress`` on,
    ``session.progress()`` follows the run while it goes on."""
    if session.settings.get("engine") == "spark":
        from flowsql.spark import run_plan
        from flowsql.spark.progress import SparkProgress

        stages = SparkProgress() if session.track_progress else None
        with _followed(session, stages):
            return run_plan(physical, session.settings, stages)
    from flowsql.optimizer.distribution import parallelism
    from flowsql.optimizer.search import runs_on_workers
    from flowsql.runtime.batch_progress import ProgressTracker

    progress = ProgressTracker(physical) if session.track_progress else None
    workers = parallelism(session.settings)
    with _followed(session, progress):
        # without exchanges the search chose one subtask: run in this process, no workers
        if workers > 1 and runs_on_workers(physical):
            from flowsql.runtime.parallel import ParallelRunner

            if session.parallel_runner is None:
                session.parallel_runner = ParallelRunner()
            return session.parallel_runner.execute(  # type: ignore[no-any-return]
                physical, session.settings, workers, progress)
        from flowsql.runtime.executor import execute

        return execute(physical, session.settings, progress)


@contextlib.contextmanager
def _followed(session: Session, source: ProgressSource | None) -> Iterator[None]:
    """``source`` is what ``session.progress()`` reads while the body runs."""
    session.running_query = source
    try:
        yield
    finally:
        session.running_query = None


def _stream_query(session: Session, physical: PhysicalPlan, info: Any, plan_text: str
                  ) -> Result:
    """A SELECT in streaming mode: a changelog that runs when it is read --
    ``Result.stream()`` shows the changes as they happen, ``to_arrow()`` runs a query over
    bounded input to its end and returns the final rows."""
    from flowsql.planner.schema import to_arrow_schema
    from flowsql.runtime.streaming.job import ChangelogStream

    stream = ChangelogStream(lambda: streaming_run(session, physical),
                             to_arrow_schema(physical.schema), info.bounded)
    return Result("query", plan_text=plan_text, changelog=stream)


def streaming_run(session: Session, physical: PhysicalPlan) -> Any:
    """A run of a streaming plan: in this process, or on the session's workers when
    ``parallelism.default`` > 1 (the plan then has its exchanges)."""
    from flowsql.optimizer.distribution import parallelism

    settings = dict(session.settings)
    workers = parallelism(settings)
    if workers > 1:
        from flowsql.runtime.parallel import ParallelRunner

        if session.parallel_runner is None:
            session.parallel_runner = ParallelRunner()
        return session.parallel_runner.stream(physical, settings, workers)
    if recovers(settings):
        from flowsql.runtime.streaming.local_recovering_run import LocalRecoveringRun

        return LocalRecoveringRun(physical, settings)
    from flowsql.runtime.streaming.executor import StreamingRun

    return StreamingRun(physical, settings)


def recovers(settings: dict[str, str]) -> bool:
    """Whether a streaming run needs checkpoints or restarts: checkpointing is on, a
    restart strategy is set, or the job starts from a checkpoint."""
    from flowsql.planner.config.settings import SettingValues

    values = SettingValues(settings)
    return any(values.get(key) is not None for key in (
        "execution.checkpointing.interval", "restart-strategy.type",
        "execution.savepoint.path"))
