"""The streaming planning pass and PROCTIME() columns: a column computed as PROCTIME() is a
processing-time attribute (kept by filters and pass-through projections, lost by any other
expression); an operator that uses one as its time gets a ProctimeWatermark node right
below it; EXPLAIN shows that node; a column that is neither kind of time attribute is
rejected with its name."""

from __future__ import annotations

import pytest

import flowsql
from flowsql.errors import PlanError
from flowsql.planner.expressions import ColumnRef
from flowsql.planner.physical import PhysicalPlan, WindowAggregateExec
from flowsql.planner.physical_streaming import (
    IntervalJoinExec,
    OverAggregateExec,
    ProctimeWatermarkExec,
    StreamJoinExec,
    WatermarkAssignerExec,
)
from flowsql.session import Session
from flowsql.session.execute.planning import plan_statement
from flowsql.sql.statement_parser import parse_one


@pytest.fixture()
def session() -> Session:
    s = flowsql.connect()
    s.sql("CREATE TABLE t (k INT, v INT, pt AS PROCTIME()) "
          "WITH ('connector' = 'datagen', 'number-of-rows' = '10')")
    s.sql("CREATE TABLE u (k INT, w INT, pt AS PROCTIME()) "
          "WITH ('connector' = 'datagen', 'number-of-rows' = '10')")
    # both kinds of time attribute in one table
    s.sql("CREATE TABLE e (k INT, ts TIMESTAMP(3), pt AS PROCTIME(), "
          "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
          "WITH ('connector' = 'datagen', 'number-of-rows' = '10')")
    s.sql("SET 'execution.runtime-mode' = 'streaming'")
    return s


def plan(session: Session, query: str) -> PhysicalPlan:
    _, _, physical, _ = plan_statement(session, parse_one(query))  # type: ignore[arg-type]
    return physical  # type: ignore[no-any-return]


def nodes(root: PhysicalPlan, kind: type) -> list[PhysicalPlan]:
    found = [root] if isinstance(root, kind) else []
    for child in root.inputs:
        found += nodes(child, kind)
    return found


def window_query(window: str) -> str:
    return (f"SELECT k, window_start, window_end, COUNT(*) AS c FROM TABLE({window}) "
            "GROUP BY k, window_start, window_end")


@pytest.mark.parametrize("window", [
    "TUMBLE(TABLE t, DESCRIPTOR(pt), INTERVAL '1' SECOND)",
    "HOP(TABLE t, DESCRIPTOR(pt), INTERVAL '1' SECOND, INTERVAL '2' SECOND)",
    "CUMULATE(TABLE t, DESCRIPTOR(pt), INTERVAL '1' SECOND, INTERVAL '3' SECOND)",
    "SESSION(TABLE t PARTITION BY k, DESCRIPTOR(pt), INTERVAL '1' SECOND)",
])
def test_window_aggregate_over_proctime_gets_a_clock_watermark(session: Session,
                                                               window: str) -> None:
    (aggregate,) = nodes(plan(session, window_query(window)), WindowAggregateExec)
    assert isinstance(aggregate, WindowAggregateExec)
    clock = aggregate.input
    assert isinstance(clock, ProctimeWatermarkExec)
    assert isinstance(clock.time_column, ColumnRef)
    assert clock.time_column.cid == aggregate.time_column.cid  # type: ignore[attr-defined]
    assert [f.name for f in clock.schema] == ["k", "v", "pt"]
    assert aggregate.watermark_delay_ms is None  # time comes from upstream watermarks


def test_explain_shows_the_clock_watermark(session: Session) -> None:
    text = session.sql("EXPLAIN " + window_query(
        "TUMBLE(TABLE t, DESCRIPTOR(pt), INTERVAL '1' SECOND)")).to_arrow().column(0)
    physical = "\n".join(str(line) for line in text.to_pylist()).split("== Physical Plan ==")[1]
    lines = [line.strip() for line in physical.strip().splitlines()]
    assert [line.split(" ")[0] for line in lines] == [
        "Project", "WindowAggregate", "ProctimeWatermark", "Project", "TableScan"]
    assert lines[2] == ("ProctimeWatermark pt (wall clock) rows=~10 "
                        "id=proctime-watermark-65d2fdfb4525")


def test_batch_mode_plans_no_clock_watermark(session: Session) -> None:
    session.sql("SET 'execution.runtime-mode' = 'batch'")
    physical = plan(session, window_query("TUMBLE(TABLE t, DESCRIPTOR(pt), INTERVAL '1' SECOND)"))
    assert nodes(physical, ProctimeWatermarkExec) == []


def test_filters_and_pass_through_projections_keep_the_attribute(session: Session) -> None:
    session.sql("CREATE VIEW big AS SELECT k AS key, pt AS t_read FROM t WHERE v > 3")
    physical = plan(session, "SELECT key, window_start, COUNT(*) AS c FROM TABLE(TUMBLE("
                             "TABLE big, DESCRIPTOR(t_read), INTERVAL '1' SECOND)) "
                             "GROUP BY key, window_start, window_end")
    (clock,) = nodes(physical, ProctimeWatermarkExec)
    assert isinstance(clock, ProctimeWatermarkExec)
    assert [f.name for f in clock.schema if f.cid == clock.time_column.cid] == ["t_read"]  # type: ignore[attr-defined]


def test_proctime_window_on_a_table_with_a_rowtime_too(session: Session) -> None:
    by_pt = plan(session, window_query("TUMBLE(TABLE e, DESCRIPTOR(pt), INTERVAL '1' SECOND)"))
    (aggregate,) = nodes(by_pt, WindowAggregateExec)
    # the clock watermark sits above the event-time assigner, whose watermarks stop there
    assert isinstance(aggregate.input, ProctimeWatermarkExec)  # type: ignore[attr-defined]
    assert len(nodes(aggregate, WatermarkAssignerExec)) == 1
    by_ts = plan(session, window_query("TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' SECOND)"))
    assert nodes(by_ts, ProctimeWatermarkExec) == []


@pytest.mark.parametrize(("setup", "window", "column"), [
    # an expression over the proctime is no longer a time attribute
    ("CREATE VIEW shifted AS SELECT k, CAST(pt AS TIMESTAMP(3)) AS p FROM t",
     "TUMBLE(TABLE shifted, DESCRIPTOR(p), INTERVAL '1' SECOND)", "p"),
    ("CREATE TABLE plain (k INT, ts TIMESTAMP(3)) WITH ('connector' = 'datagen', "
     "'number-of-rows' = '10')", "TUMBLE(TABLE plain, DESCRIPTOR(ts), INTERVAL '1' SECOND)",
     "ts"),
])
def test_a_column_that_is_no_time_attribute_is_rejected_by_name(
        session: Session, setup: str, window: str, column: str) -> None:
    session.sql(setup)
    with pytest.raises(PlanError) as info:
        plan(session, window_query(window))
    assert str(info.value) == (
        f"window aggregate in streaming mode: the time column '{column}' is not a rowtime "
        "attribute (declare WATERMARK FOR it in CREATE TABLE) nor a processing-time "
        "attribute (a column AS PROCTIME())")


def test_interval_join_on_proctimes_clocks_both_inputs(session: Session) -> None:
    physical = plan(session, "SELECT t.k, t.v, u.w FROM t JOIN u ON t.k = u.k AND "
                             "u.pt BETWEEN t.pt - INTERVAL '1' SECOND AND "
                             "t.pt + INTERVAL '2' SECOND")
    (join,) = nodes(physical, IntervalJoinExec)
    assert isinstance(join, IntervalJoinExec)
    assert isinstance(join.left, ProctimeWatermarkExec)
    assert isinstance(join.right, ProctimeWatermarkExec)
    assert (join.lower_ms, join.upper_ms) == (-1_000, 2_000)
    assert join.left.time_column.cid == join.left_time.cid  # type: ignore[attr-defined]
    assert join.right.time_column.cid == join.right_time.cid  # type: ignore[attr-defined]


def test_a_rowtime_bounded_by_a_proctime_is_a_regular_join(session: Session) -> None:
    physical = plan(session, "SELECT t.k, e.ts FROM t JOIN e ON t.k = e.k AND "
                             "e.ts BETWEEN t.pt - INTERVAL '1' SECOND AND t.pt")
    assert nodes(physical, IntervalJoinExec) == []
    assert len(nodes(physical, StreamJoinExec)) == 1
    assert nodes(physical, ProctimeWatermarkExec) == []


def test_over_ordered_by_proctime_gets_a_clock_watermark(session: Session) -> None:
    physical = plan(session, "SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY pt ROWS "
                             "BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n FROM t")
    (over,) = nodes(physical, OverAggregateExec)
    assert isinstance(over, OverAggregateExec)
    assert isinstance(over.input, ProctimeWatermarkExec)


def test_over_ordered_by_a_plain_column_names_both_attribute_kinds(session: Session) -> None:
    with pytest.raises(PlanError, match=r"ordered by a time attribute ascending .*WATERMARK "
                                        r"on it or computed AS PROCTIME\(\)"):
        plan(session, "SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY v ROWS "
                      "BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS n FROM t")
