"""Streaming queries at parallelism 2 (worker processes, exchanges carrying watermarks)
give the same rows as at parallelism 1, for every kind of streaming operator.

The inputs are Parquet files of many row groups, so the two scan subtasks read
interleaved shares, and their events are out of order only within the watermark delay: no
record is late at either parallelism, so the final rows must be equal. At parallelism 1
the same queries are checked against hand-computed or batch-mode results elsewhere
(tests/streaming, tests/runtime/operators); here one DuckDB check pins the inputs too.
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql

EPOCH = dt.datetime(2024, 1, 1)
KEYS = ["a", "b", "c", "d", "e", "f", "g"]


def _events(path: Path, count: int, seed: int) -> Path:
    """``count`` events one second apart, jittered by up to 0.4 s (the watermark delay is
    1 s, so none is late), written in row groups of 150 rows."""
    rng = np.random.default_rng(seed)
    millis = np.arange(count, dtype=np.int64) * 1000 + rng.integers(-400, 400, count)
    table = pa.table({
        "k": pa.array(rng.choice(KEYS, count)),
        "v": pa.array(rng.integers(0, 100, count), pa.int64()),
        "ts": pa.array([EPOCH + dt.timedelta(milliseconds=int(m)) for m in millis],
                       pa.timestamp("ms"))})
    pq.write_table(table, path, row_group_size=150)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("parallel_streaming")
    return {"l": _events(root / "l.parquet", 1500, 1), "r": _events(root / "r.parquet", 900, 2)}


def _session(files: dict[str, Path], parallelism: int) -> flowsql.Session:
    session = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                 "pipeline.auto-watermark-interval": "0",
                                 "execution.batch-size": "64",
                                 "parallelism.default": str(parallelism)})
    for name, path in files.items():
        session.sql(f"""CREATE TABLE {name} (k STRING, v BIGINT, ts TIMESTAMP(3),
                          WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
                        WITH ('connector' = 'filesystem', 'path' = '{path}')""")
    session.sql("""CREATE TABLE gen (id BIGINT, k INT, v INT) WITH ('connector' = 'datagen',
                     'rows-per-second' = '0', 'number-of-rows' = '5000',
                     'fields.k.min' = '1', 'fields.k.max' = '50', 'seed' = '3')""")
    return session


@pytest.fixture(scope="module")
def sessions(files: dict[str, Path]) -> Iterator[tuple[flowsql.Session, flowsql.Session]]:
    one, two = _session(files, 1), _session(files, 2)
    yield one, two
    one.close()
    two.close()


def _window(kind: str) -> str:
    return {"tumble": "TUMBLE(TABLE l, DESCRIPTOR(ts), INTERVAL '10' SECOND)",
            "hop": "HOP(TABLE l, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND)",
            "cumulate": "CUMULATE(TABLE l, DESCRIPTOR(ts), INTERVAL '5' SECOND, "
                        "INTERVAL '20' SECOND)",
            "session": "SESSION(TABLE l PARTITION BY k, DESCRIPTOR(ts), INTERVAL '2' SECOND)",
            }[kind]


QUERIES = {
    "filter": "SELECT k, v * 2 AS w, ts FROM l WHERE v > 30",
    **{f"window_{kind}": f"""SELECT k, window_start, window_end, COUNT(*) AS c, SUM(v) AS s,
                                    MAX(v) AS m
                             FROM TABLE({_window(kind)}) GROUP BY k, window_start, window_end"""
       for kind in ("tumble", "hop", "cumulate", "session")},
    "window_global": f"""SELECT window_start, COUNT(*) AS c, AVG(v) AS a
                         FROM TABLE({_window('tumble')}) GROUP BY window_start, window_end""",
    "group": "SELECT k, COUNT(*) AS c, SUM(v) AS s, MIN(v) AS lo, COUNT(DISTINCT v) AS d "
             "FROM l GROUP BY k",
    "group_global": "SELECT COUNT(*) AS c, SUM(v) AS s FROM l",
    "group_of_group": "SELECT c, COUNT(*) AS n FROM (SELECT k, COUNT(*) AS c FROM gen "
                      "GROUP BY k) GROUP BY c",
    "datagen_group": "SELECT k, COUNT(*) AS c, SUM(v) AS s FROM gen GROUP BY k",
    "join_inner": "SELECT l.k, l.v, r.v AS rv FROM l JOIN r ON l.k = r.k AND l.v = r.v",
    "join_left": "SELECT l.k, l.v, r.v AS rv FROM l LEFT JOIN r ON l.k = r.k AND l.v = r.v",
    "join_of_aggregates": "SELECT a.k, a.c, b.c AS rc FROM (SELECT k, COUNT(*) AS c FROM l "
                          "GROUP BY k) a JOIN (SELECT k, COUNT(*) AS c FROM r GROUP BY k) b "
                          "ON a.k = b.k",
    "interval_join": "SELECT l.k, l.v, r.v AS rv FROM l, r WHERE l.k = r.k AND "
                     "r.ts BETWEEN l.ts - INTERVAL '2' SECOND AND l.ts + INTERVAL '1' SECOND",
    "top_n": "SELECT k, v, rn FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY "
             "v DESC, ts) AS rn FROM l) WHERE rn <= 3",
    "dedup": "SELECT k, v, ts FROM (SELECT k, v, ts, ROW_NUMBER() OVER (PARTITION BY k "
             "ORDER BY ts) AS rn FROM l) WHERE rn = 1",
    "window_top_n": f"""SELECT k, window_start, v, rn FROM (SELECT k, window_start, v,
                          ROW_NUMBER() OVER (PARTITION BY window_start, window_end
                                             ORDER BY v DESC, ts) AS rn
                          FROM TABLE({_window('tumble')})) WHERE rn <= 2""",
    "over_rows": "SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 3 "
                 "PRECEDING AND CURRENT ROW) AS s FROM l",
    "over_range": "SELECT k, v, COUNT(*) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN "
                  "INTERVAL '10' SECOND PRECEDING AND CURRENT ROW) AS c FROM l",
    "union_all": "SELECT k, v FROM l WHERE v < 10 UNION ALL SELECT k, v FROM r WHERE v > 90",
    **{f"window_join_{name}": f"""SELECT a.k, a.window_start, a.v, b.v AS rv
          FROM TABLE({_window('tumble')}) a
          {kind} TABLE({_window('tumble').replace('TABLE l', 'TABLE r')}) b
          ON a.window_start = b.window_start AND a.window_end = b.window_end AND a.k = b.k
             AND a.v < b.v"""
       for name, kind in (("inner", "JOIN"), ("left", "LEFT JOIN"))},
    # cascading window aggregation: per-key window counts of l and r, window-joined,
    # then summed per window by an insert-only windowed aggregate
    "window_cascade": f"""SELECT a.window_start, a.window_end, SUM(a.c) AS lc, SUM(b.c) AS rc,
                                 MAX(a.s) AS top, COUNT(*) AS n
          FROM (SELECT k, window_start, window_end, COUNT(*) AS c, SUM(v) AS s
                FROM TABLE({_window('tumble')}) GROUP BY k, window_start, window_end) a
          JOIN (SELECT k, window_start, window_end, COUNT(*) AS c
                FROM TABLE({_window('tumble').replace('TABLE l', 'TABLE r')})
                GROUP BY k, window_start, window_end) b
          ON a.window_start = b.window_start AND a.window_end = b.window_end AND a.k = b.k
          GROUP BY a.window_start, a.window_end""",
}


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_parallelism_two_gives_the_rows_of_parallelism_one(
        sessions: tuple[flowsql.Session, flowsql.Session], name: str) -> None:
    one, two = sessions
    expected = _rows(one.sql(QUERIES[name]).to_arrow())
    result = two.sql(QUERIES[name])
    assert "Exchange[" in result.explain()
    assert expected, "the query must produce rows to compare"
    assert _rows(result.to_arrow()) == expected


def test_a_keyed_operator_gets_a_hash_exchange_after_the_watermark_assigner(
        sessions: tuple[flowsql.Session, flowsql.Session]) -> None:
    plan = sessions[1].sql(QUERIES["window_tumble"]).explain()
    lines = [line.strip() for line in plan.split("== Physical Plan ==")[1].splitlines()]
    order = [next(i for i, line in enumerate(lines) if line.startswith(prefix))
             for prefix in ("Exchange[gather]", "WindowAggregate", "Exchange[hash]",
                            "WatermarkAssigner", "TableScan")]
    assert order == sorted(order), plan


def test_group_counts_match_duckdb(files: dict[str, Path],
                                   sessions: tuple[flowsql.Session, flowsql.Session]) -> None:
    expected = duckdb.sql(f"SELECT k, COUNT(*), SUM(v), MIN(v), COUNT(DISTINCT v) "
                          f"FROM '{files['l']}' GROUP BY k").fetchall()
    got = _rows(sessions[1].sql(QUERIES["group"]).to_arrow())
    assert got == sorted(((k, c, int(s), lo, d) for k, c, s, lo, d in expected), key=repr)


def test_insert_job_at_parallelism_two_writes_every_row_and_reports_metrics(
        sessions: tuple[flowsql.Session, flowsql.Session], tmp_path: Path) -> None:
    one, two = sessions
    two.sql(f"""CREATE TABLE out (k STRING, c BIGINT, s BIGINT) WITH (
                  'connector' = 'filesystem', 'path' = '{tmp_path}', 'format' = 'csv')""")
    job = two.sql("INSERT INTO out SELECT k, COUNT(*), SUM(v) FROM TABLE("
                  f"{_window('tumble')}) GROUP BY k, window_start, window_end").job
    assert job.wait(120) == "FINISHED"
    written = pa.concat_tables(
        [pa.csv.read_csv(p, read_options=pa.csv.ReadOptions(column_names=["k", "c", "s"]))
         for p in sorted(tmp_path.glob("part-*"))])
    expected = one.sql("SELECT k, COUNT(*) AS c, SUM(v) AS s FROM TABLE("
                       f"{_window('tumble')}) GROUP BY k, window_start, window_end").to_arrow()
    assert _rows(written) == _rows(expected.rename_columns(["k", "c", "s"]))
    metrics = {m["operator"].split(" ")[0]: m for m in job.metrics()}
    assert metrics["SinkExec"]["records_written"] == expected.num_rows
    assert metrics["SinkExec"]["subtasks"] == 2
    assert metrics["TableScanExec"]["records_out"] == 1500
    assert metrics["TableScanExec"]["subtasks"] == 2
    assert metrics["WindowAggregateExec"]["late_records_dropped"] == 0
    assert metrics["WindowAggregateExec"]["watermark"] == 2**63 - 1  # ended: +infinity


def test_unbounded_query_at_parallelism_two_stops_when_the_consumer_stops(
        sessions: tuple[flowsql.Session, flowsql.Session]) -> None:
    two = sessions[1]
    two.sql("""CREATE TABLE endless (id BIGINT, k INT) WITH ('connector' = 'datagen',
                 'rows-per-second' = '2000', 'fields.k.min' = '1', 'fields.k.max' = '3')""")
    stream = two.sql("SELECT id, k FROM endless WHERE k = 2").stream()
    taken = list(itertools.islice((row for b in stream for row in zip(*b.to_pydict().values())),
                                  20))
    stream.close()  # type: ignore[attr-defined]
    assert len(taken) == 20 and all(op == "+I" and k == 2 for op, _, k in taken)
    # the cluster is free again: the next query runs and finishes
    assert _rows(two.sql("SELECT COUNT(*) AS c FROM gen").to_arrow()) == [(5000,)]


def test_processing_time_windows_at_parallelism_two_count_every_row_once(
        sessions: tuple[flowsql.Session, flowsql.Session]) -> None:
    """Which window a row lands in depends on the clock; that every row lands in exactly
    one tumbling window of its key does not, also with the wall-clock watermarks of two
    source subtasks merged behind a hash exchange."""
    two = sessions[1]
    two.sql("""CREATE TABLE clocked (k INT, v INT, pt AS PROCTIME()) WITH (
                 'connector' = 'datagen', 'number-of-rows' = '600', 'rows-per-second' = '2000',
                 'fields.k.min' = '0', 'fields.k.max' = '3', 'seed' = '5')""")
    result = two.sql("""SELECT k, window_start, window_end, COUNT(*) AS c
                        FROM TABLE(TUMBLE(TABLE clocked, DESCRIPTOR(pt),
                                          INTERVAL '50' MILLISECOND))
                        GROUP BY k, window_start, window_end""")
    assert "Exchange[hash]" in result.explain() and "ProctimeWatermark" in result.explain()
    rows = result.to_arrow().to_pylist()
    windows = [(r["k"], r["window_start"]) for r in rows]
    assert len(windows) == len(set(windows)), "a (key, window) fired twice"
    assert all(r["window_end"] - r["window_start"] == dt.timedelta(milliseconds=50)
               for r in rows)
    per_key: dict[int, int] = {}
    for r in rows:
        per_key[r["k"]] = per_key.get(r["k"], 0) + r["c"]
    counted = two.sql("SELECT k, COUNT(*) AS c FROM clocked GROUP BY k").to_arrow()
    assert per_key == dict(zip(counted["k"].to_pylist(), counted["c"].to_pylist()))
    assert sum(per_key.values()) == 600


def test_an_idle_source_subtask_does_not_hold_back_windows_downstream(
        tmp_path: Path) -> None:
    """A watched directory with one file: one source subtask reads it, the other has
    nothing. With table.exec.source.idle-timeout the silent subtask tells its receivers
    it is idle, so the windows behind the hash exchange fire while the job runs (without
    it they would wait for a watermark that never comes)."""
    incoming = tmp_path / "in"
    incoming.mkdir()
    lines = [f"{k},{v},2024-01-01 00:00:{s:02d}" for s, (k, v) in
             enumerate([("a", 1), ("b", 2), ("a", 3), ("a", 4), ("b", 5), ("a", 6)])]
    (incoming / "1.csv").write_text("\n".join(lines) + "\n")
    with flowsql.connect(**{"execution.runtime-mode": "streaming", "parallelism.default": "2",
                            "table.exec.source.idle-timeout": "200 ms",
                            "pipeline.auto-watermark-interval": "0"}) as session:
        session.sql(f"""CREATE TABLE src (k STRING, v BIGINT, ts TIMESTAMP(3),
                          WATERMARK FOR ts AS ts) WITH ('connector' = 'filesystem',
                          'path' = '{incoming}', 'format' = 'csv',
                          'source.monitor-interval' = '50 ms')""")
        result = session.sql("""SELECT k, window_start, COUNT(*) AS c, SUM(v) AS s
                                FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts),
                                                  INTERVAL '2' SECOND))
                                GROUP BY k, window_start, window_end""")
        guard = threading.Timer(60, result.changelog.cancel)  # a failure, never a hang
        guard.start()
        stream = result.stream()
        rows = itertools.islice((row for b in stream for row in zip(*b.to_pydict().values())),
                                3)
        fired = sorted(rows, key=repr)
        stream.close()  # type: ignore[attr-defined]
        guard.cancel()
    at = lambda s: EPOCH + dt.timedelta(seconds=s)  # noqa: E731
    # the watermark reached 00:00:05: the windows [0, 2) and [2, 4) fired, [4, 6) is open
    assert fired == sorted([("+I", "a", at(0), 1, 1), ("+I", "b", at(0), 1, 2),
                            ("+I", "a", at(2), 2, 7)], key=repr)
