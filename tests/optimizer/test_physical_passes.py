"""The physical passes run as one ordered list: which passes apply in batch and streaming
mode, with INSERT INTO and on the spark engine, and that the list ends in the sanity check."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import flowsql
from flowsql.errors import PlanError
from flowsql.optimizer import optimize, plan_physical
from flowsql.optimizer.physical_passes import PHYSICAL_PASSES
from flowsql.planner.physical import ExchangeExec, PhysicalPlan
from flowsql.planner.physical_streaming import GroupAggregateExec, SinkExec
from flowsql.session import Session
from flowsql.session.execute.insert import sink_plan
from flowsql.session.execute.planning import bind_query
from flowsql.sql.statement_parser import QueryStatement, parse_one


@pytest.fixture()
def session() -> Iterator[Session]:
    s = flowsql.connect()
    s.sql("CREATE TABLE t (k INT, v INT) "
          "WITH ('connector' = 'datagen', 'number-of-rows' = '10')")
    s.sql("CREATE TABLE out (k INT, c BIGINT) WITH ('connector' = 'blackhole')")
    yield s
    s.close()


def passes_run(session: Session, query: str, insert: bool = False) -> tuple[str, ...]:
    statement = parse_one(query)
    assert isinstance(statement, QueryStatement)
    optimized = optimize(bind_query(session, statement), session.settings)
    target = session.catalog.get("out")
    sink = (lambda plan: sink_plan(plan, target, None)) if insert else None  # type: ignore[arg-type]
    planned = plan_physical(optimized.plan, session.settings, optimized.context.estimator,
                            sink)
    return planned.passes_run


def test_the_list_starts_with_operator_choice_and_ends_with_the_sanity_check() -> None:
    names = [p.name for p in PHYSICAL_PASSES]
    assert names == ["choose_operators", "add_sink", "plan_streaming",
                     "place_streaming_exchanges", "search_physical", "share_subplans",
                     "sanity_check"]


def test_batch_on_the_local_engine(session: Session) -> None:
    assert passes_run(session, "SELECT k, count(*) FROM t GROUP BY k") == (
        "choose_operators", "search_physical", "share_subplans", "sanity_check")


def test_batch_on_spark_places_no_exchanges(session: Session) -> None:
    session.set("engine", "spark")
    session.set("parallelism.default", "2")
    assert passes_run(session, "SELECT k FROM t") == ("choose_operators", "search_physical",
                                                       "share_subplans", "sanity_check")
    text = session.sql("EXPLAIN SELECT k, count(*) FROM t GROUP BY k").plan_text or ""
    assert "Exchange" not in text


def test_sharing_subplans_can_be_switched_off(session: Session) -> None:
    session.set("optimizer.share-subplans", "false")
    assert passes_run(session, "SELECT k FROM t") == ("choose_operators", "search_physical",
                                                       "sanity_check")


def test_streaming_insert(session: Session) -> None:
    session.set("execution.runtime-mode", "streaming")
    assert passes_run(session, "SELECT k, count(*) FROM t GROUP BY k", insert=True) == (
        "choose_operators", "add_sink", "plan_streaming", "place_streaming_exchanges",
        "sanity_check")


def test_streaming_on_spark_is_rejected_after_operator_choice(session: Session) -> None:
    session.set("engine", "spark")
    session.set("execution.runtime-mode", "streaming")
    with pytest.raises(PlanError, match="spark engine runs bounded queries in batch mode"):
        passes_run(session, "SELECT k FROM t")


def test_the_sink_is_added_before_the_streaming_exchanges(session: Session) -> None:
    """The sink writes where its input runs: every exchange is below the aggregate, none
    between the aggregate's subtasks and the sink (only the empty root result is gathered)."""
    session.set("execution.runtime-mode", "streaming")
    session.set("parallelism.default", "2")
    statement = parse_one("SELECT k, count(*) FROM t GROUP BY k")
    assert isinstance(statement, QueryStatement)
    optimized = optimize(bind_query(session, statement), session.settings)
    target = session.catalog.get("out")
    planned = plan_physical(optimized.plan, session.settings, optimized.context.estimator,
                            lambda plan: sink_plan(plan, target, None))  # type: ignore[arg-type]
    root = planned.physical
    assert isinstance(root, ExchangeExec) and root.kind == "gather"
    node: PhysicalPlan = root.input
    assert isinstance(node, SinkExec)
    while not isinstance(node, GroupAggregateExec):
        assert not isinstance(node, ExchangeExec), "an exchange between aggregate and sink"
        node = node.inputs[0]
    assert isinstance(node.input, ExchangeExec) and node.input.kind == "hash"
