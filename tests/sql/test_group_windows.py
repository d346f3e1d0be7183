"""Flink's group windows (``GROUP BY k, TUMBLE(ts, size)``, ``HOP``, ``SESSION`` with their
``_START`` / ``_END`` / ``_ROWTIME`` functions) in batch mode: the rows of the window
table function form, hand-checked on a small input and against DuckDB on a larger one,
and misuse reported at line:col.

The small input, event times in seconds after 2024-01-01 00:00:00:

    k  v  ts
    a  1   1
    b  2   2
    a  3   3
    a  4  12
    a  6  14
    b  5  25
    b  7  26
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import BindError

EPOCH = dt.datetime(2024, 1, 1)
ROWS = [("a", 1, 1), ("b", 2, 2), ("a", 3, 3), ("a", 4, 12), ("a", 6, 14), ("b", 5, 25),
        ("b", 7, 26)]


def at(seconds: float) -> dt.datetime:
    return EPOCH + dt.timedelta(seconds=seconds)


def write_events(path: Path, rows: list[tuple[str, int, float]]) -> Path:
    pq.write_table(pa.table({
        "k": [r[0] for r in rows], "v": pa.array([r[1] for r in rows], pa.int32()),
        "ts": pa.array([at(r[2]) for r in rows], pa.timestamp("ms"))}), path)
    return path


def random_rows(n: int, seed: int) -> list[tuple[str, int, float]]:
    """In event-time order (no late rows), with gaps of 0 to 4 s so sessions of a 3 s gap
    both merge and split."""
    rng = random.Random(seed)
    out, t = [], 0.0
    for _ in range(n):
        t += rng.randrange(0, 4000) / 1000
        out.append((rng.choice("abc"), rng.randrange(1, 100), t))
    return out


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_events(tmp_path_factory.mktemp("gw") / "small.parquet", ROWS)


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_events(tmp_path_factory.mktemp("gw") / "large.parquet", random_rows(600, 7))


def session_over(path: Path) -> flowsql.Session:
    s = flowsql.connect()
    s.sql(f"""CREATE TABLE events (k STRING, v INT, ts TIMESTAMP(3),
                 WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
              WITH ('connector' = 'filesystem', 'path' = '{path}')""")
    return s


def rows(session: flowsql.Session, sql: str) -> list[tuple]:
    return sorted(tuple(r.values()) for r in session.sql(sql).to_arrow().to_pylist())


def windowed(*expected: tuple) -> list[tuple]:
    """(key, start s, end s, *rest) -> rows with timestamps, sorted."""
    return sorted((k, at(a), at(b), *rest) for k, a, b, *rest in expected)


def test_tumble_hand_checked(small: Path) -> None:
    s = session_over(small)
    got = rows(s, """SELECT k, TUMBLE_START(ts, INTERVAL '10' SECOND) AS ws,
                            TUMBLE_END(ts, INTERVAL '10' SECOND) AS we, count(*) AS c,
                            sum(v) AS sv
                     FROM events GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND)""")
    assert got == windowed(("a", 0, 10, 2, 4), ("a", 10, 20, 2, 10), ("b", 0, 10, 1, 2),
                           ("b", 20, 30, 2, 12))


def test_tumble_rowtime_is_window_end_minus_one_millisecond(small: Path) -> None:
    s = session_over(small)
    got = rows(s, """SELECT E.k, TUMBLE_ROWTIME(E.ts, INTERVAL '10' SECOND) AS rt,
                            TUMBLE_PROCTIME(E.ts, INTERVAL '10' SECOND) AS pt
                     FROM events AS E GROUP BY E.k, TUMBLE(E.ts, INTERVAL '10' SECOND)""")
    ends = [("a", 10), ("a", 20), ("b", 10), ("b", 30)]
    assert got == sorted((k, at(e - 0.001), at(e - 0.001)) for k, e in ends)


def test_hop_hand_checked(small: Path) -> None:
    s = session_over(small)
    got = rows(s, """SELECT 'all' AS k,
                            HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS ws,
                            HOP_END(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND) AS we,
                            count(*) AS c, sum(v) AS sv
                     FROM events GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '10' SECOND)""")
    assert got == windowed(("all", -5, 5, 3, 6), ("all", 0, 10, 3, 6), ("all", 5, 15, 2, 10),
                           ("all", 10, 20, 2, 10), ("all", 20, 30, 2, 12),
                           ("all", 25, 35, 2, 12))


def test_session_hand_checked(small: Path) -> None:
    """Sessions are per key: a's rows at 1 and 3 are one session, b's row at 2 its own."""
    s = session_over(small)
    got = rows(s, """SELECT k, SESSION_START(ts, INTERVAL '5' SECOND) AS ws,
                            SESSION_END(ts, INTERVAL '5' SECOND) AS we, count(*) AS c,
                            sum(v) AS sv,
                            SESSION_ROWTIME(ts, INTERVAL '5' SECOND) AS rt
                     FROM events GROUP BY k, SESSION(ts, INTERVAL '5' SECOND)""")
    assert got == windowed(("a", 1, 8, 2, 4, at(7.999)), ("a", 12, 19, 2, 10, at(18.999)),
                           ("b", 2, 7, 1, 2, at(6.999)), ("b", 25, 31, 2, 12, at(30.999)))


# group window spelling, window TVF spelling of the same query
SPELLINGS = [
    ("""SELECT k, TUMBLE_START(ts, INTERVAL '10' SECOND), TUMBLE_END(ts, INTERVAL '10' SECOND),
               count(*), sum(v), max(v)
        FROM events WHERE v > 10 GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND)""",
     """SELECT k, window_start, window_end, count(*), sum(v), max(v)
        FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
        WHERE v > 10 GROUP BY k, window_start, window_end"""),
    ("""SELECT HOP_START(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND),
               HOP_END(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND), k, count(*), min(v)
        FROM events GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND), k""",
     """SELECT window_start, window_end, k, count(*), min(v)
        FROM TABLE(HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '5' SECOND,
                       INTERVAL '15' SECOND))
        GROUP BY window_start, window_end, k"""),
    ("""SELECT k, SESSION_START(ts, INTERVAL '3' SECOND), SESSION_END(ts, INTERVAL '3' SECOND),
               count(*), sum(v)
        FROM events GROUP BY k, SESSION(ts, INTERVAL '3' SECOND)""",
     """SELECT k, window_start, window_end, count(*), sum(v)
        FROM TABLE(SESSION(TABLE events PARTITION BY k, DESCRIPTOR(ts), INTERVAL '3' SECOND))
        GROUP BY k, window_start, window_end"""),
    ("""SELECT x.k, TUMBLE_END(x.ts, INTERVAL '1' MINUTE) AS e, count(*) AS c
        FROM (SELECT k, ts FROM events WHERE v % 2 = 0) AS x
        GROUP BY x.k, TUMBLE(x.ts, INTERVAL '1' MINUTE) HAVING count(*) > 1""",
     """SELECT k, window_end AS e, count(*) AS c
        FROM TABLE(TUMBLE(TABLE evens, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
        GROUP BY k, window_start, window_end HAVING count(*) > 1"""),
]


@pytest.mark.parametrize(("group_window", "tvf"), SPELLINGS)
def test_group_window_equals_window_tvf(large: Path, group_window: str, tvf: str) -> None:
    s = session_over(large)
    s.sql("CREATE VIEW evens AS SELECT k, ts FROM events WHERE v % 2 = 0")
    expected = rows(s, tvf)
    assert len(expected) > 20
    assert rows(s, group_window) == expected


def test_tumble_and_hop_against_duckdb(large: Path) -> None:
    s = session_over(large)
    con = duckdb.connect()
    tumble = rows(s, """SELECT k, TUMBLE_START(ts, INTERVAL '7' SECOND), count(*), sum(v)
                        FROM events GROUP BY k, TUMBLE(ts, INTERVAL '7' SECOND)""")
    expected = con.sql(f"""
        SELECT k, make_timestamp((epoch_ms(ts) // 7000 * 7000) * 1000) AS ws, count(*),
               sum(v)
        FROM '{large}' GROUP BY k, ws""").fetchall()
    assert tumble == sorted(expected)
    hop = rows(s, """SELECT HOP_END(ts, INTERVAL '2' SECOND, INTERVAL '6' SECOND), count(*)
                     FROM events GROUP BY HOP(ts, INTERVAL '2' SECOND, INTERVAL '6' SECOND)""")
    expected = con.sql(f"""
        SELECT make_timestamp((epoch_ms(ts) // 2000 * 2000 + 2000 * (o + 1)) * 1000) AS we,
               count(*)
        FROM '{large}', range(3) AS r(o) GROUP BY we""").fetchall()
    assert hop == sorted(expected)


ERRORS = [
    ("SELECT k, TUMBLE_START(ts, INTERVAL '10' SECOND) FROM events GROUP BY k",
     "TUMBLE_START(...) needs the group window TUMBLE(...) in GROUP BY", (1, 24)),
    ("SELECT k, HOP_END(ts, INTERVAL '10' SECOND)\nFROM events\n"
     "GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND)",
     "HOP_END(...) does not match the group window TUMBLE(ts, INTERVAL '10' SECOND)", (1, 19)),
    ("SELECT k, TUMBLE_END(ts, INTERVAL '5' SECOND) FROM events\n"
     "GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND)",
     "the arguments must be the same", (1, 22)),
    ("SELECT count(*) FROM events GROUP BY TUMBLE(ts, INTERVAL '10' SECOND, "
     "INTERVAL '1' SECOND)", "TUMBLE group window expects (time_column, size); got 3",
     (1, 45)),
    ("SELECT count(*) FROM events GROUP BY HOP(ts, INTERVAL '10' SECOND)",
     "HOP group window expects (time_column, slide, size)", (1, 42)),
    ("SELECT TUMBLE(ts, INTERVAL '10' SECOND) FROM events",
     "TUMBLE(...) is a group window: it belongs directly in GROUP BY", (1, 15)),
    ("SELECT count(*) FROM events GROUP BY TUMBLE(ts, INTERVAL '1' SECOND),\n"
     "  TUMBLE(ts, INTERVAL '2' SECOND)", "only one group window", (2, 10)),
    ("SELECT count(*) FROM events GROUP BY SESSION(ts, INTERVAL '1' SECOND), upper(k)",
     "the other GROUP BY keys must be columns", (1, 78)),
    ("SELECT count(*) FROM events GROUP BY TUMBLE(v, INTERVAL '1' SECOND)",
     "TUMBLE: the time column 'v' has type INT", (1, 45)),
    ("SELECT count(*) FROM events GROUP BY TUMBLE(ts, INTERVAL '-1' SECOND)",
     "TUMBLE: the size must be positive", None),
    ("SELECT count(*) FROM events a JOIN events b ON a.k = b.k\n"
     "GROUP BY TUMBLE(a.ts, INTERVAL '1' SECOND)", "over a join is not supported", (2, 17)),
]


@pytest.mark.parametrize(("sql", "message", "pos"), ERRORS)
def test_misuse_is_reported_at_line_and_column(small: Path, sql: str, message: str,
                                               pos: tuple[int, int] | None) -> None:
    s = session_over(small)
    with pytest.raises(BindError) as info:
        s.sql(sql)
    assert message in str(info.value)
    if pos is not None:
        assert (info.value.line, info.value.col) == pos
