"""EXPLAIN [(COSTS OFF)] [VERBOSE | MEMO | PYSPARK | ANALYZE]: the plans of a query, as a
one-column table of lines (ANALYZE runs the query: ``explain_analyze``; MEMO prints the
physical search's memo: ``explain_memo``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from flowsql.session.execute.planning import explain_text, plan_query
from flowsql.session.result import Result
from flowsql.sql.statement_parser import ExplainStatement

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["execute_explain"]


def execute_explain(session: Session, statement: ExplainStatement) -> Result:
    if statement.mode == "analyze":
        from flowsql.session.execute.explain_analyze import execute_explain_analyze

        return execute_explain_analyze(session, statement)
    logical, optimized, physical = plan_query(session, statement)
    if statement.mode == "pyspark":
        from flowsql.spark import pyspark_program

        source = pyspark_program(physical, session.settings)
        return Result("explain", table=pa.table({"plan": source.split("\n")}), plan_text=source)
    from flowsql.optimizer.physical_passes import streaming_mode

    streaming = streaming_mode(session.settings)
    if statement.mode == "memo":
        return explain_memo(session, optimized, streaming)
    search = None
    if statement.mode == "verbose" and not streaming:
        # planned once more to keep the search's result: its notes are per plan node
        from flowsql.optimizer import plan_physical

        planned = plan_physical(optimized.plan, session.settings, optimized.context.estimator)
        physical, search = planned.physical, planned.search
    text = explain_text(logical, optimized, physical, verbose=statement.mode == "verbose",
                        streaming=streaming, estimates=statement.estimates, search=search)
    return Result("explain", table=pa.table({"plan": text.split("\n")}), plan_text=text)


def explain_memo(session: Session, optimized, streaming: bool) -> Result:  # type: ignore[no-untyped-def]
    """The chosen physical plan with each operator's cost and delivered properties, then
    every group of the search's memo with the alternatives costed per requirement, the
    kept one marked (``optimizer/search/memo_listing``), then the root's alternatives.
    Streaming plans are not searched: an error says so."""
    from flowsql.errors import PlanError
    from flowsql.optimizer import plan_physical
    from flowsql.optimizer.search.annotations import memo_lines, operator_notes
    from flowsql.optimizer.search.memo_listing import memo_listing
    from flowsql.planner.explain import explain_physical

    planned = plan_physical(optimized.plan, session.settings, optimized.context.estimator)
    search = planned.search
    if streaming or search is None:
        raise PlanError("EXPLAIN MEMO shows the physical search of a batch query; "
                        "a streaming plan is not searched (use EXPLAIN)")
    lines = ["== Physical Plan ==",
             explain_physical(planned.physical, notes=operator_notes(search)), "",
             *memo_listing(search), "",
             "== Physical Alternatives At The Root ==", *memo_lines(search)]
    text = "\n".join(lines)
    return Result("explain", table=pa.table({"plan": text.split("\n")}), plan_text=text)
