"""From a query statement to its plans: bind, optimize, plan physically, and EXPLAIN text.

Every statement that runs a query (SELECT, INSERT INTO, EXPLAIN) plans it here, so the three
always see the same plan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import sqlglot

from flowsql.planner.config import SettingValues
from flowsql.planner.logical import LogicalPlan
from flowsql.planner.physical import PhysicalPlan
from flowsql.sql.bind_query import QueryBinder
from flowsql.sql.dialect import DIALECT
from flowsql.sql.statement_parser import ExplainStatement, QueryStatement

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["bind_query", "explain_text", "parse_view", "plan_query", "plan_statement"]


def parse_view(sql: str):  # type: ignore[no-untyped-def]
    """The AST of a view's stored query (the binder expands views with it)."""
    return sqlglot.parse_one(sql, read=DIALECT)


def bind_query(session: Session, statement: QueryStatement | ExplainStatement) -> LogicalPlan:
    """The statement's logical plan, bound in the session's ``table.local-time-zone``."""
    from flowsql.session.execute.stale_statistics import refresh_stale_statistics

    refresh_stale_statistics(session, statement.ast)
    time_zone = SettingValues(session.settings).time_zone("table.local-time-zone")
    return QueryBinder(session.catalog, statement.text, parse_view, time_zone).bind(
        statement.ast)


def plan_query(session: Session, statement: QueryStatement | ExplainStatement):  # type: ignore[no-untyped-def]
    """Bind, optimize and physically plan a query: (logical, optimized, physical)."""
    logical, optimized, physical, _ = plan_statement(session, statement)
    return logical, optimized, physical


def plan_statement(session: Session, statement: QueryStatement | ExplainStatement,
                   sink: Callable[[PhysicalPlan], PhysicalPlan] | None = None):  # type: ignore[no-untyped-def]
    """(logical, optimized, physical, stream info or None in batch mode); ``sink`` wraps
    the physical plan (INSERT INTO) before the streaming pass. The physical plan is what
    the optimizer's physical passes (``optimizer.physical_passes``) make of the optimized
    one."""
    from flowsql.optimizer import optimize, plan_physical

    logical = bind_query(session, statement)
    optimized = optimize(logical, session.settings)
    planned = plan_physical(optimized.plan, session.settings, optimized.context.estimator,
                            sink)
    return logical, optimized, planned.physical, planned.stream


def explain_text(logical: LogicalPlan, optimized, physical: PhysicalPlan,  # type: ignore[no-untyped-def]
                 verbose: bool = False, streaming: bool = False, estimates: bool = True,
                 search=None) -> str:
    """The three plans as EXPLAIN shows them; a streaming plan shows the operator id of
    every operator that keeps state (what checkpoints and savepoints file it under);
    ``estimates=False`` (``EXPLAIN (COSTS OFF)``) leaves the estimated rows out. With
    ``search`` (the physical search's result for ``physical``, EXPLAIN VERBOSE of a batch
    query) every operator shows its cost and delivered properties, and the alternatives
    costed at the root follow the plan."""
    from flowsql.planner.explain import explain_logical, explain_physical
    from flowsql.planner.operator_ids import node_operator_ids

    ids = node_operator_ids(physical) if streaming else None
    notes = None
    if search is not None:
        from flowsql.optimizer.search.annotations import operator_notes

        notes = operator_notes(search)
    parts = ["== Logical Plan ==", explain_logical(logical), "",
             "== Optimized Logical Plan ==", explain_logical(optimized.plan), "",
             "== Physical Plan ==", explain_physical(physical, ids, estimates, notes)]
    if verbose:
        parts += ["", "== Rules That Changed The Plan ==", *optimized.changed_by]
        if optimized.context.notes:
            parts += ["", "== Costed Rewrite Decisions ==", *optimized.context.notes]
    if search is not None:
        from flowsql.optimizer.search.annotations import memo_lines

        parts += ["", "== Physical Alternatives At The Root ==", *memo_lines(search)]
    return "\n".join(parts)
