"""Window TVF aggregation from SQL text to rows, against Flink's documented semantics.

The input has out-of-order and late events. Its rows, in file order, with event times in
seconds after 2024-01-01 00:00:00 and the watermark each one sees on arrival under
``WATERMARK FOR ts AS ts - INTERVAL '2' SECOND`` with auto-watermark-interval 0
(max event time seen before it minus 2 s):

    k  v  ts   arrival watermark
    a  1   1   -inf
    b  2   2   -1
    a  3  12    0
    a  4   3   10   late: every window of ts 3 ends by 10 (sessions: [3, 8) too)
    b  5  25   10
    a  6   9   23   late: its windows end by 15 (session [9, 14) too)
    b  7  26   23

Streaming mode drops the two late rows; batch mode keeps every row.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import BindError, FlowSQLError, PlanError, SqlSyntaxError

EPOCH = dt.datetime(2024, 1, 1)
ROWS = [("a", 1, 1), ("b", 2, 2), ("a", 3, 12), ("a", 4, 3), ("b", 5, 25), ("a", 6, 9),
        ("b", 7, 26)]


def at(seconds: int) -> dt.datetime:
    return EPOCH + dt.timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("events") / "events.parquet"
    pq.write_table(pa.table({
        "k": [r[0] for r in ROWS], "v": pa.array([r[1] for r in ROWS], pa.int32()),
        "ts": pa.array([at(r[2]) for r in ROWS], pa.timestamp("ms"))}), path)
    return path


def session_for(events: Path, mode: str) -> flowsql.Session:
    s = flowsql.connect()
    s.sql(f"""CREATE TABLE events (k STRING, v INT, ts TIMESTAMP(3),
                 WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
              WITH ('connector' = 'filesystem', 'path' = '{events}')""")
    s.sql(f"SET 'execution.runtime-mode' = '{mode}'")
    s.sql("SET 'pipeline.auto-watermark-interval' = '0'")
    return s


def rows(session: flowsql.Session, sql: str) -> list[tuple]:
    table = session.sql(sql).to_arrow()
    return sorted(tuple(r.values()) for r in table.to_pylist())


def windowed(*expected: tuple) -> list[tuple]:
    """(start s, end s, *rest) -> rows with timestamps, sorted."""
    return sorted((at(a), at(b), *rest) for a, b, *rest in expected)


TUMBLE = """SELECT window_start, window_end, k, count(*) AS c, sum(v) AS s
            FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
            GROUP BY window_start, window_end, k"""
HOP = """SELECT window_start, window_end, count(*) AS c, sum(v) AS s
         FROM TABLE(HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '5' SECOND,
                        INTERVAL '10' SECOND))
         GROUP BY window_start, window_end"""
CUMULATE = """SELECT window_start, window_end, k, count(*) AS c, sum(v) AS s
              FROM TABLE(CUMULATE(TABLE events, DESCRIPTOR(ts), INTERVAL '5' SECOND,
                                  INTERVAL '10' SECOND))
              GROUP BY window_start, window_end, k"""
SESSION = """SELECT window_start, window_end, k, count(*) AS c, sum(v) AS s
             FROM TABLE(SESSION(TABLE events PARTITION BY k, DESCRIPTOR(ts),
                                INTERVAL '5' SECOND))
             GROUP BY window_start, window_end, k"""

STREAMING = {
    "tumble": (TUMBLE, windowed((0, 10, "a", 1, 1), (0, 10, "b", 1, 2), (10, 20, "a", 1, 3),
                                (20, 30, "b", 2, 12))),
    "hop": (HOP, windowed((-5, 5, 2, 3), (0, 10, 2, 3), (5, 15, 1, 3), (10, 20, 1, 3),
                          (20, 30, 2, 12), (25, 35, 2, 12))),
    "cumulate": (CUMULATE, windowed((0, 5, "a", 1, 1), (0, 10, "a", 1, 1), (0, 5, "b", 1, 2),
                                    (0, 10, "b", 1, 2), (10, 15, "a", 1, 3),
                                    (10, 20, "a", 1, 3), (20, 30, "b", 2, 12))),
    "session": (SESSION, windowed((1, 6, "a", 1, 1), (2, 7, "b", 1, 2), (12, 17, "a", 1, 3),
                                  (25, 31, "b", 2, 12))),
}
BATCH = {
    "tumble": (TUMBLE, windowed((0, 10, "a", 3, 11), (0, 10, "b", 1, 2), (10, 20, "a", 1, 3),
                                (20, 30, "b", 2, 12))),
    "hop": (HOP, windowed((-5, 5, 3, 7), (0, 10, 4, 13), (5, 15, 2, 9), (10, 20, 1, 3),
                          (20, 30, 2, 12), (25, 35, 2, 12))),
    "cumulate": (CUMULATE, windowed((0, 5, "a", 2, 5), (0, 10, "a", 3, 11), (0, 5, "b", 1, 2),
                                    (0, 10, "b", 1, 2), (10, 15, "a", 1, 3),
                                    (10, 20, "a", 1, 3), (20, 30, "b", 2, 12))),
    "session": (SESSION, windowed((1, 8, "a", 2, 5), (9, 17, "a", 2, 9), (2, 7, "b", 1, 2),
                                  (25, 31, "b", 2, 12))),
}


@pytest.mark.parametrize("kind", sorted(STREAMING))
def test_streaming_drops_late_records(events: Path, kind: str) -> None:
    sql, expected = STREAMING[kind]
    assert rows(session_for(events, "streaming"), sql) == expected


@pytest.mark.parametrize("kind", sorted(BATCH))
def test_batch_keeps_every_record(events: Path, kind: str) -> None:
    sql, expected = BATCH[kind]
    assert rows(session_for(events, "batch"), sql) == expected


def test_streaming_plan_is_a_window_aggregate_with_the_watermark(events: Path) -> None:
    plan = session_for(events, "streaming").sql(f"EXPLAIN {TUMBLE}").plan_text
    assert plan is not None
    assert "WindowAggregate tumble(size=10000ms) time=ts" in plan
    assert "WatermarkAssigner ts - 2000ms interval=0ms" in plan
    assert "HashAggregate" not in plan


def test_where_filters_after_the_watermark(events: Path) -> None:
    # v <> 3 removes the ts-12 row from the result, but it still advances the watermark
    # to 10, so the ts-3 row stays late.
    sql = TUMBLE.replace("GROUP BY", "WHERE v <> 3 GROUP BY")
    assert rows(session_for(events, "streaming"), sql) == windowed(
        (0, 10, "a", 1, 1), (0, 10, "b", 1, 2), (20, 30, "b", 2, 12))


def duck_events(events: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE events AS SELECT * FROM read_parquet('{events}')")
    return con


def test_batch_tumble_matches_duckdb(events: Path) -> None:
    expected = duck_events(events).execute("""
        WITH w AS (SELECT *, make_timestamp((epoch_ms(ts) // 10000 * 10000) * 1000) AS ws
                   FROM events)
        SELECT ws, ws + INTERVAL 10 SECOND, k, count(*), sum(v) FROM w GROUP BY ALL""")
    assert rows(session_for(events, "batch"), TUMBLE) == sorted(expected.fetchall())


def test_batch_hop_matches_duckdb(events: Path) -> None:
    expected = duck_events(events).execute("""
        WITH w AS (SELECT *, make_timestamp((epoch_ms(ts) // 5000 * 5000 - 5000 * i) * 1000)
                             AS ws
                   FROM events, range(2) AS r(i))
        SELECT ws, ws + INTERVAL 10 SECOND, count(*), sum(v) FROM w GROUP BY ALL""")
    assert rows(session_for(events, "batch"), HOP) == sorted(expected.fetchall())


def test_window_tvf_without_aggregate_assigns_windows(events: Path) -> None:
    s = session_for(events, "batch")
    got = rows(s, """SELECT k, v, window_start, window_end, window_time
                     FROM TABLE(HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '5' SECOND,
                                    INTERVAL '10' SECOND)) WHERE v <= 2""")
    ms = dt.timedelta(milliseconds=1)
    assert got == sorted([("a", 1, at(-5), at(5), at(5) - ms), ("a", 1, at(0), at(10), at(10) - ms),
                          ("b", 2, at(-5), at(5), at(5) - ms), ("b", 2, at(0), at(10), at(10) - ms)])
    tumble = s.sql("SELECT * FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), "
                   "INTERVAL '10' SECOND, INTERVAL '1' SECOND)) AS w").to_arrow()
    assert tumble.column_names == ["k", "v", "ts", "window_start", "window_end", "window_time"]
    assert tumble.column("window_start").to_pylist() == [at(1), at(1), at(11), at(1), at(21),
                                                        at(1), at(21)]


def test_session_without_aggregate_is_rejected(events: Path) -> None:
    s = session_for(events, "batch")
    with pytest.raises(PlanError, match="SESSION windows are supported only"):
        s.sql("SELECT * FROM TABLE(SESSION(TABLE events PARTITION BY k, DESCRIPTOR(ts), "
              "INTERVAL '5' SECOND))")


def test_streaming_needs_a_watermark(tmp_path: Path, events: Path) -> None:
    s = flowsql.connect()
    s.sql(f"CREATE TABLE plain (k STRING, v INT, ts TIMESTAMP(3)) "
          f"WITH ('connector' = 'filesystem', 'path' = '{events}')")
    s.sql("SET 'execution.runtime-mode' = 'streaming'")
    with pytest.raises(PlanError, match=r"is not a rowtime attribute \(declare WATERMARK"):
        s.sql(TUMBLE.replace("TABLE events", "TABLE plain"))


def test_watermark_ddl_is_stored(events: Path) -> None:
    s = session_for(events, "batch")
    entry = s.catalog.get("events")
    assert entry.watermark is not None
    assert (entry.watermark.column, entry.watermark.delay_ms) == ("ts", 2000)
    s.sql(f"CREATE TABLE e2 (ts TIMESTAMP(3), WATERMARK FOR ts AS ts) "
          f"WITH ('connector' = 'filesystem', 'path' = '{events}')")
    assert s.catalog.get("e2").watermark.delay_ms == 0
    s.sql(f"CREATE TABLE e3 (ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '1' MINUTE) "
          f"WITH ('connector' = 'filesystem', 'path' = '{events}')")
    assert s.catalog.get("e3").watermark.delay_ms == 60_000


@pytest.mark.parametrize(("ddl", "message", "col"), [
    ("CREATE TABLE x (ts TIMESTAMP(3),\n  WATERMARK FOR ts AS ts * 2) WITH ('path' = 'p')",
     "unsupported watermark strategy", 23),
    ("CREATE TABLE x (ts TIMESTAMP(3),\n  WATERMARK FOR ts AS ts - INTERVAL '1' MONTH) "
     "WITH ('path' = 'p')", "non-negative day-time interval", 23),
    ("CREATE TABLE x (ts INT,\n  WATERMARK FOR ts AS ts) WITH ('path' = 'p')",
     "must be a TIMESTAMP", None),
])
def test_bad_watermark_ddl(ddl: str, message: str, col: int | None) -> None:
    with pytest.raises(SqlSyntaxError, match=message) as info:
        flowsql.connect().sql(ddl)
    if col is not None:
        assert (info.value.line, info.value.col) == (2, col)


@pytest.mark.parametrize(("call", "message", "col"), [
    ("TUMBLE(TABLE events, DESCRIPTOR(nope), INTERVAL '10' SECOND)", "column 'nope'", 44),
    ("TUMBLE(TABLE events, DESCRIPTOR(v), INTERVAL '10' SECOND)", "must be a TIMESTAMP", 44),
    ("HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '3' SECOND, INTERVAL '10' SECOND)",
     "must divide the window size", 55),
    ("TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' MONTH)", "day-time interval", 58),
    ("TUMBLE(TABLE events, DESCRIPTOR(ts), 10)", "interval literal", 49),
    ("TUMBLE(TABLE nosuch, DESCRIPTOR(ts), INTERVAL '10' SECOND)", "table 'nosuch' not found",
     25),
])
def test_bad_window_tvf_call_points_at_the_argument(events: Path, call: str, message: str,
                                                    col: int) -> None:
    s = session_for(events, "batch")
    with pytest.raises(BindError, match=message) as info:
        s.sql(f"SELECT *\nFROM TABLE({call})")
    assert (info.value.line, info.value.col) == (2, col)


def test_wrong_argument_count(events: Path) -> None:
    with pytest.raises(BindError, match="HOP expects TABLE, DESCRIPTOR and then slide, size"):
        session_for(events, "batch").sql(
            "SELECT * FROM TABLE(HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '5' SECOND))")


def test_tvf_syntax_error_has_a_position() -> None:
    with pytest.raises(SqlSyntaxError, match="TABLE <name>") as info:
        flowsql.connect().sql("SELECT *\nFROM TABLE(TUMBLE(events, DESCRIPTOR(ts), "
                              "INTERVAL '1' SECOND))")
    assert info.value.line == 2


def test_view_over_a_window_tvf_round_trips(events: Path) -> None:
    s = session_for(events, "streaming")
    s.sql(f"CREATE VIEW per_window AS {SESSION}")
    assert rows(s, "SELECT * FROM per_window") == STREAMING["session"][1]


def test_datagen_table_is_bounded_by_number_of_rows() -> None:
    s = flowsql.connect()
    s.sql("""CREATE TABLE gen (id BIGINT, v INT, ts TIMESTAMP(3))
             WITH ('connector' = 'datagen', 'number-of-rows' = '250',
                   'fields.id.kind' = 'sequence', 'fields.id.start' = '1',
                   'fields.id.end' = '1000', 'fields.v.min' = '0', 'fields.v.max' = '9',
                   'rows-per-second' = '0')""")
    got = s.sql("SELECT count(*) AS n, min(id) AS lo, max(id) AS hi, sum(id) AS total "
                "FROM gen").to_arrow().to_pylist()
    assert got == [{"n": 250, "lo": 1, "hi": 250, "total": 250 * 251 // 2}]
    counts = s.sql("SELECT count(*) AS c FROM gen WHERE v BETWEEN 0 AND 9").to_arrow()
    assert counts.column("c").to_pylist() == [250]


def test_datagen_errors() -> None:
    s = flowsql.connect()
    with pytest.raises(FlowSQLError, match="names no column"):
        s.sql("CREATE TABLE g (id INT) WITH ('connector' = 'datagen', 'fields.x.min' = '1')")
    s.sql("CREATE TABLE g (id INT) WITH ('connector' = 'datagen')")
    with pytest.raises(FlowSQLError, match="unbounded"):
        s.sql("SELECT count(*) FROM g")


@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_window_group_by_without_aggregates_lists_the_windows_of_each_key(
        events: Path, mode: str) -> None:
    """GROUP BY k, window_start, window_end with no aggregate (a DISTINCT over windows):
    the group-by of the accumulators has no aggregate column to keep."""
    got = rows(session_for(events, mode), """
        SELECT k, window_start FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts),
                                                 INTERVAL '10' SECOND))
        GROUP BY k, window_start, window_end""")
    # streaming drops a@3 and a@9 (late), but a@1 keeps a's window [0, 10) anyway
    assert got == [("a", at(0)), ("a", at(10)), ("b", at(0)), ("b", at(20))]
