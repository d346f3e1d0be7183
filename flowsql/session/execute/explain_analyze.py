"""EXPLAIN ANALYZE: run a batch query and show its physical plan with, per operator, the
estimated and actual rows, the q-error and the operator's own time.

The query runs exactly as a SELECT would on the local engine -- in this process at
parallelism 1, on the session's workers above -- except that every operator is timed at
the boundary where its output is pulled (``runtime.operator_profile``); its rows are
discarded. The figures come back as ``Result.analysis`` (a table) and as the text lines.

Only bounded queries in batch mode have an end to measure up to: in streaming mode, and on
the Spark engine (which this runtime cannot time), EXPLAIN ANALYZE is a PlanError saying so.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pyarrow as pa

from flowsql.errors import PlanError
from flowsql.planner.explain_analyze import OperatorActuals, analysis_table, explain_analyze
from flowsql.planner.physical import PhysicalPlan
from flowsql.session.execute.planning import plan_statement
from flowsql.session.result import Result
from flowsql.sql.statement_parser import ExplainStatement

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["execute_explain_analyze"]


def execute_explain_analyze(session: Session, statement: ExplainStatement) -> Result:
    if session.settings.get("engine") == "spark":
        raise PlanError("EXPLAIN ANALYZE measures the local engine; SET 'engine' = 'local' "
                        "to analyze this query (EXPLAIN PYSPARK shows the Spark program)")
    _, _, physical, stream = plan_statement(session, statement)
    if stream is not None:
        raise PlanError("EXPLAIN ANALYZE runs a query to its end and measures it, so it "
                        "needs batch mode; this query is planned as a stream "
                        "(execution.runtime-mode = 'streaming'), which may never end. Use "
                        "EXPLAIN for its plan, or SET 'execution.runtime-mode' = 'batch' for "
                        "a bounded query")
    from flowsql.optimizer.distribution import parallelism
    from flowsql.optimizer.search import runs_on_workers

    # a plan without exchanges was chosen to run on one subtask, in this process
    workers = parallelism(session.settings) if runs_on_workers(physical) else 1
    started = time.perf_counter()
    table, actuals = _run_profiled(session, physical, workers)
    elapsed = time.perf_counter() - started
    analysis = analysis_table(physical, actuals)
    text = explain_analyze(analysis, elapsed, workers)
    return Result("explain", table=pa.table({"plan": text.split("\n")}), plan_text=text,
                  metrics={"seconds": elapsed, "rows": table.num_rows}, analysis=analysis)


def _run_profiled(session: Session, physical: PhysicalPlan, workers: int
                  ) -> tuple[pa.Table, dict[str, OperatorActuals]]:
    if workers > 1:
        from flowsql.runtime.parallel import ParallelRunner

        if session.parallel_runner is None:
            session.parallel_runner = ParallelRunner()
        return session.parallel_runner.execute_profiled(  # type: ignore[no-any-return]
            physical, session.settings, workers)
    from flowsql.runtime.executor import execute_profiled

    return execute_profiled(physical, session.settings)
