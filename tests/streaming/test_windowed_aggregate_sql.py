"""Window aggregation over inputs that already carry window bounds -- after a window join,
a window Top-N, or another window aggregate (Flink's cascading window aggregation) --
from SQL text to rows: an insert-only WindowedAggregate, whose rows equal batch mode's.

Inputs, event times in seconds after 2024-01-01 00:00:00, in file order, under
``WATERMARK FOR ts AS ts - INTERVAL '2' SECOND`` (out of order by less than the delay, so
no row is late):

    l: (a, 1, 1) (b, 2, 4) (c, 4, 11) (a, 5, 9) (a, 3, 12) (b, 6, 25)   (k, v, ts)
    r: (a, 10, 2) (c, 20, 3) (a, 30, 14) (b, 40, 15) (d, 50, 27)
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import flowsql
from tests.harness.event_tables import LEFT, RIGHT, at, events_session, sorted_rows, write_events

# ts 15 moves the watermark to 13 s, which fires [0, 10) before the row at 5 s arrives
LATE = [("a", 1, 1), ("a", 2, 15), ("a", 3, 5), ("b", 4, 16)]




@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("windowed_aggregate")
    return {"l": write_events(root / "l.parquet", LEFT), "r": write_events(root / "r.parquet", RIGHT),
            "late": write_events(root / "late.parquet", LATE)}



@pytest.fixture(scope="module")
def streaming(files: dict[str, Path]) -> flowsql.Session:
    return events_session(files, "streaming")


@pytest.fixture(scope="module")
def batch(files: dict[str, Path]) -> flowsql.Session:
    return events_session(files, "batch")



def changelog(session: flowsql.Session, sql: str) -> tuple[set[str], list[tuple]]:
    """(the row kinds of the streamed changelog, its rows without the kind column)."""
    batches = list(session.sql(sql).stream())
    kinds = {op for b in batches for op in b.column(0).to_pylist()}
    table = pa.Table.from_batches(batches).drop_columns(["op"])
    return kinds, sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def physical(session: flowsql.Session, sql: str) -> str:
    return session.sql(sql).explain().split("== Physical Plan ==")[1]


def tumble(table: str, seconds: int) -> str:
    return f"TUMBLE(TABLE {table}, DESCRIPTOR(ts), INTERVAL '{seconds}' SECOND)"


AFTER_JOIN = f"""
    SELECT L.window_start, L.window_end, L.k, COUNT(*) AS c, SUM(R.v) AS s, MIN(L.v) AS lo,
           AVG(L.v) AS a
    FROM TABLE({tumble('l', 10)}) L JOIN TABLE({tumble('r', 10)}) R
    ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k
    GROUP BY L.window_start, L.window_end, L.k"""

PER_KEY = (f"SELECT k, window_start, window_end, COUNT(*) AS c FROM TABLE({tumble('l', 5)}) "
           "GROUP BY k, window_start, window_end")
CASCADE = (f"SELECT window_start, window_end, SUM(c) AS total FROM ({PER_KEY}) "
           "GROUP BY window_start, window_end")


def test_window_aggregate_after_a_window_join_is_insert_only_and_equals_batch_mode(
        streaming: flowsql.Session, batch: flowsql.Session) -> None:
    plan = physical(streaming, AFTER_JOIN)
    assert ("WindowedAggregate window=(window_start, window_end) groups=[window_start, "
            "window_end, k]") in plan
    assert "WindowJoin[inner]" in plan and "GroupAggregate" not in plan
    kinds, got = changelog(streaming, AFTER_JOIN)
    assert kinds == {"+I"}
    # [0, 10): l a1, a5 each meet r a10; [10, 20): l a3 meets r a30
    assert got == sorted_rows(batch, AFTER_JOIN) == sorted([
        (at(0), at(10), "a", 2, 20, 1, 3.0), (at(10), at(20), "a", 1, 30, 3, 3.0)], key=repr)


def test_cascading_window_aggregate_sums_per_key_counts_per_window(
        streaming: flowsql.Session, batch: flowsql.Session) -> None:
    plan = physical(streaming, CASCADE)
    assert "WindowedAggregate window=(window_start, window_end)" in plan
    assert "WindowAggregate tumble(size=5000ms)" in plan and "GroupAggregate" not in plan
    kinds, got = changelog(streaming, CASCADE)
    assert kinds == {"+I"}
    # [0, 5): a1 b4; [5, 10): a9; [10, 15): c11 a12; [25, 30): b25
    assert got == sorted_rows(batch, CASCADE) == sorted([
        (at(0), at(5), 2), (at(5), at(10), 1), (at(10), at(15), 2), (at(25), at(30), 1)],
        key=repr)


def test_a_cascade_keeps_window_bounds_for_a_third_level(
        streaming: flowsql.Session, batch: flowsql.Session) -> None:
    query = (f"SELECT window_start, MAX(total) AS m, COUNT(*) AS n FROM ({CASCADE}) "
             "GROUP BY window_start, window_end")
    assert physical(streaming, query).count("WindowedAggregate") == 2
    kinds, got = changelog(streaming, query)
    assert kinds == {"+I"}
    assert got == sorted_rows(batch, query) == sorted([
        (at(0), 2, 1), (at(5), 1, 1), (at(10), 2, 1), (at(25), 1, 1)], key=repr)


def test_window_aggregate_after_a_window_top_n(streaming: flowsql.Session,
                                               batch: flowsql.Session) -> None:
    query = f"""SELECT window_start, window_end, COUNT(*) AS c, SUM(v) AS s FROM (
                  SELECT k, v, window_start, window_end, ROW_NUMBER() OVER (
                      PARTITION BY window_start, window_end ORDER BY v DESC) AS rn
                  FROM TABLE({tumble('l', 10)})) WHERE rn <= 2
                GROUP BY window_start, window_end"""
    plan = physical(streaming, query)
    assert "WindowedAggregate" in plan and "WindowRank" in plan
    kinds, got = changelog(streaming, query)
    assert kinds == {"+I"}
    # top 2 by v: [0, 10) a5 b2; [10, 20) c4 a3; [20, 30) b6
    assert got == sorted_rows(batch, query) == sorted([
        (at(0), at(10), 2, 7), (at(10), at(20), 2, 7), (at(20), at(30), 1, 6)], key=repr)


def test_a_late_row_is_dropped_as_the_window_aggregate_drops_it(
        streaming: flowsql.Session, batch: flowsql.Session) -> None:
    """A predicate on window_start keeps the window TVF apart from the aggregate (the
    window aggregate rule does not take it), so the windowed aggregate judges lateness:
    the row at 5 s arrives after the watermark (13 s) fired [0, 10), like in the fused
    window aggregate. Batch mode keeps it."""
    query = (f"SELECT k, window_start, COUNT(*) AS c, SUM(v) AS s FROM TABLE("
             f"{tumble('late', 10)}) WHERE window_start >= TIMESTAMP '2024-01-01 00:00:00' "
             "GROUP BY k, window_start, window_end")
    fused = query.replace("WHERE window_start >= TIMESTAMP '2024-01-01 00:00:00' ", "")
    assert "WindowedAggregate" in physical(streaming, query)
    assert "WindowAggregate tumble" in physical(streaming, fused)
    result = streaming.sql(query)
    got = sorted((tuple(r.values()) for r in result.to_arrow().to_pylist()), key=repr)
    assert got == sorted_rows(streaming, fused) == sorted([
        ("a", at(0), 1, 1), ("a", at(10), 1, 2), ("b", at(10), 1, 4)], key=repr)
    run = result.changelog.run  # type: ignore[union-attr]
    late = {m["operator"].split(" ")[0]: m.get("late_records_dropped") for m in run.metrics()}
    assert late["WindowedAggregateExec"] == 1
    assert ("a", at(0), 2, 4) in sorted_rows(batch, query)


def test_a_distinct_count_over_a_window_stays_a_windowed_aggregate(
        streaming: flowsql.Session, batch: flowsql.Session) -> None:
    """As in Flink, COUNT(DISTINCT ..) of a cascaded window aggregation is computed by the
    windowed aggregate (value sets per window): insert-only, the rows of batch mode."""
    query = (f"SELECT window_start, COUNT(DISTINCT k) AS d, SUM(c) AS s FROM ({PER_KEY}) "
             "GROUP BY window_start, window_end")
    plan = physical(streaming, query)
    assert "WindowedAggregate" in plan and "GroupAggregate" not in plan, plan
    assert sorted_rows(streaming, query) == sorted_rows(batch, query)


@pytest.mark.parametrize(("query", "why"), [
    (f"SELECT window_start, SUM(c) AS total FROM ({PER_KEY}) GROUP BY window_start",
     "grouping by one bound only is no window"),
    (f"SELECT k, window_start, window_end, SUM(c) AS total FROM (SELECT k, window_start, "
     f"window_end, c, ROW_NUMBER() OVER (PARTITION BY k ORDER BY c DESC) AS rn FROM "
     f"({PER_KEY})) WHERE rn = 1 GROUP BY k, window_start, window_end",
     "an updating input (a Top-N not per window)"),
])
def test_other_aggregates_stay_changelog_aggregates_with_batch_mode_rows(
        streaming: flowsql.Session, batch: flowsql.Session, query: str, why: str) -> None:
    plan = physical(streaming, query)
    assert "GroupAggregate[changelog]" in plan and "WindowedAggregate" not in plan, why
    assert sorted_rows(streaming, query) == sorted_rows(batch, query)
