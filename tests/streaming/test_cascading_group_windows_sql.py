"""Cascading group windows: the ``TUMBLE_ROWTIME`` / ``HOP_ROWTIME`` / ``SESSION_ROWTIME``
of an inner group-window aggregate (and the window TVF's grouped ``window_time``) is a
rowtime attribute of its result, so an outer window aggregate over it runs in streaming
mode, as in Flink. Two-level results in streaming (parallelism 1 and 2) and batch mode
equal DuckDB's, which computes the windows by arithmetic on epoch milliseconds."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql

EPOCH = dt.datetime(2024, 1, 1)
SESSION_GAP_MS = 3000


def _events() -> list[tuple[str, int, dt.datetime]]:
    """Rows in time order, ms resolution, 3 keys; no two rows of a key exactly one session
    gap apart (whether such rows share a session is an edge the test does not decide)."""
    chooser = random.Random(19)
    rows, ms = [], 0
    last: dict[str, int] = {}
    while len(rows) < 300:
        ms += chooser.choice([37, 180, 420, 900, 2600, 4100])
        key = chooser.choice("abc")
        if key in last and ms - last[key] == SESSION_GAP_MS:
            continue
        last[key] = ms
        rows.append((key, len(rows), EPOCH + dt.timedelta(milliseconds=ms)))
    return rows


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cascade") / "t.parquet"
    rows = _events()
    pq.write_table(pa.table({"k": [r[0] for r in rows],
                             "v": pa.array([r[1] for r in rows], pa.int64()),
                             "ts": pa.array([r[2] for r in rows], pa.timestamp("ms"))}),
                   path, row_group_size=64)
    return path


def _session(events: Path, mode: str, parallelism: int = 1) -> flowsql.Session:
    s = flowsql.connect(**{"execution.runtime-mode": mode,
                           "parallelism.default": str(parallelism)})
    s.sql(f"""CREATE TABLE t (k STRING, v BIGINT, ts TIMESTAMP(3),
                WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
              WITH ('connector' = 'filesystem', 'path' = '{events}')""")
    s.sql("""CREATE VIEW per_5s AS
             SELECT window_start AS ws, window_end AS we, window_time AS rt, k, COUNT(*) AS c,
                    SUM(v) AS sv
             FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND))
             GROUP BY window_start, window_end, window_time, k""")
    return s


#: epoch ms of a window start: ``ts`` floored to ``size`` ms (the windows align to 0)
def _start(column: str, size: int, back: int = 0) -> str:
    return f"epoch_ms(epoch_ms({column}) // {size} * {size} - {back})"


_INNER_TUMBLE = f"""SELECT k, {_start('ts', 5000)} + INTERVAL 4999 MILLISECOND AS rt,
                           COUNT(*) AS c, SUM(v) AS sv FROM t GROUP BY k, {_start('ts', 5000)}"""
_INNER_HOP = f"""SELECT k, ws + INTERVAL 9999 MILLISECOND AS rt, COUNT(*) AS c FROM (
                   SELECT k, {_start('ts', 5000)} AS ws FROM t UNION ALL
                   SELECT k, {_start('ts', 5000, 5000)} AS ws FROM t)
                 GROUP BY k, ws"""
_INNER_SESSION = f"""SELECT k, MAX(ts) + INTERVAL {SESSION_GAP_MS - 1} MILLISECOND AS rt,
                            COUNT(*) AS c FROM (
                       SELECT k, ts, SUM(new) OVER (PARTITION BY k ORDER BY ts) AS session FROM (
                         SELECT k, ts, CASE WHEN ts - LAG(ts) OVER (PARTITION BY k ORDER BY ts)
                           < INTERVAL {SESSION_GAP_MS} MILLISECOND THEN 0 ELSE 1 END AS new
                         FROM t))
                     GROUP BY k, session"""

#: (flowsql two-level query, the same for DuckDB)
CASES = {
    "tumble_rowtime_then_tumble": (
        """SELECT TUMBLE_START(rt, INTERVAL '20' SECOND) AS w, TUMBLE_ROWTIME(rt,
                  INTERVAL '20' SECOND) AS wt, SUM(c) AS c, MAX(sv) AS m FROM (
             SELECT k, TUMBLE_ROWTIME(ts, INTERVAL '5' SECOND) AS rt, COUNT(*) AS c,
                    SUM(v) AS sv
             FROM t GROUP BY k, TUMBLE(ts, INTERVAL '5' SECOND)) x
           GROUP BY TUMBLE(rt, INTERVAL '20' SECOND)""",
        f"""SELECT {_start('rt', 20000)} AS w,
                   {_start('rt', 20000)} + INTERVAL 19999 MILLISECOND AS wt,
                   SUM(c) AS c, MAX(sv) AS m FROM ({_INNER_TUMBLE}) GROUP BY 1, 2"""),
    "hop_rowtime_then_tumble_per_key": (
        """SELECT k, TUMBLE_END(rt, INTERVAL '30' SECOND) AS w, SUM(c) AS c FROM (
             SELECT k, HOP_ROWTIME(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS rt,
                    COUNT(*) AS c
             FROM t GROUP BY k, HOP(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)) x
           GROUP BY k, TUMBLE(rt, INTERVAL '30' SECOND)""",
        f"""SELECT k, {_start('rt', 30000)} + INTERVAL 30 SECOND AS w, SUM(c) AS c
            FROM ({_INNER_HOP}) GROUP BY 1, 2"""),
    "session_rowtime_then_tumble": (
        f"""SELECT TUMBLE_START(rt, INTERVAL '15' SECOND) AS w, COUNT(*) AS sessions,
                   SUM(c) AS c FROM (
              SELECT k, SESSION_ROWTIME(ts, INTERVAL '{SESSION_GAP_MS // 1000}' SECOND) AS rt,
                     COUNT(*) AS c
              FROM t GROUP BY k, SESSION(ts, INTERVAL '{SESSION_GAP_MS // 1000}' SECOND)) x
            GROUP BY TUMBLE(rt, INTERVAL '15' SECOND)""",
        f"""SELECT {_start('rt', 15000)} AS w, COUNT(*) AS sessions, SUM(c) AS c
            FROM ({_INNER_SESSION}) GROUP BY 1"""),
    "tvf_window_time_then_tvf": (
        """SELECT window_start, window_end, window_time, COUNT(*) AS n, SUM(c) AS c
           FROM TABLE(TUMBLE(TABLE per_5s, DESCRIPTOR(rt), INTERVAL '10' SECOND))
           GROUP BY window_start, window_end, window_time""",
        f"""SELECT {_start('rt', 10000)} AS ws, {_start('rt', 10000)} + INTERVAL 10 SECOND,
                   {_start('rt', 10000)} + INTERVAL 9999 MILLISECOND, COUNT(*), SUM(c)
            FROM ({_INNER_TUMBLE}) GROUP BY 1"""),
    "three_levels": (
        """SELECT TUMBLE_START(rt2, INTERVAL '60' SECOND) AS w, SUM(c) AS c FROM (
             SELECT TUMBLE_ROWTIME(rt, INTERVAL '20' SECOND) AS rt2, SUM(c) AS c FROM (
               SELECT k, TUMBLE_ROWTIME(ts, INTERVAL '5' SECOND) AS rt, COUNT(*) AS c
               FROM t GROUP BY k, TUMBLE(ts, INTERVAL '5' SECOND)) x
             GROUP BY TUMBLE(rt, INTERVAL '20' SECOND)) y
           GROUP BY TUMBLE(rt2, INTERVAL '60' SECOND)""",
        f"""SELECT {_start('rt', 60000)} AS w, SUM(c) FROM ({_INNER_TUMBLE}) GROUP BY 1"""),
}


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def _expected(events: Path, sql: str) -> list[tuple[Any, ...]]:
    duckdb = pytest.importorskip("duckdb")
    connection = duckdb.connect()
    connection.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{events}')")
    return _rows(connection.sql(sql).to_arrow_table())


@pytest.mark.parametrize(("mode", "parallelism"), [("batch", 1), ("streaming", 1),
                                                   ("streaming", 2)])
@pytest.mark.parametrize("case", sorted(CASES))
def test_two_level_windows_match_duckdb(events: Path, case: str, mode: str,
                                        parallelism: int) -> None:
    query, duck = CASES[case]
    got = _rows(_session(events, mode, parallelism).sql(query).to_arrow())
    assert len(got) > 3
    assert got == _expected(events, duck)


def test_both_levels_are_window_aggregates_in_streaming(events: Path) -> None:
    """The outer level is a window aggregate over the inner one's window_time, not a
    changelog aggregate (which would need no rowtime but emit updates)."""
    s = _session(events, "streaming")
    plan = "\n".join(r["plan"] for r in s.sql(
        "EXPLAIN " + CASES["tumble_rowtime_then_tumble"][0]).to_arrow().to_pylist())
    physical = plan[plan.index("== Physical Plan =="):]
    assert physical.count("WindowAggregate") == 2 and "GroupAggregate" not in physical
    assert "window_time" in physical


def test_a_tumble_proctime_result_is_no_rowtime(events: Path) -> None:
    """``_PROCTIME`` stays a computed value: an outer event-time window over it is
    refused, as before, rather than read as a rowtime."""
    s = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    s.sql(f"""CREATE TABLE p (k STRING, v BIGINT, ts TIMESTAMP(3), pt AS PROCTIME())
              WITH ('connector' = 'filesystem', 'path' = '{events}')""")
    with pytest.raises(flowsql.errors.PlanError, match="is not a rowtime attribute"):
        s.sql("""SELECT TUMBLE_START(rt, INTERVAL '20' SECOND), SUM(c) FROM (
                   SELECT k, TUMBLE_PROCTIME(pt, INTERVAL '5' SECOND) AS rt, COUNT(*) AS c
                   FROM p GROUP BY k, TUMBLE(pt, INTERVAL '5' SECOND)) x
                 GROUP BY TUMBLE(rt, INTERVAL '20' SECOND)""").to_arrow()
