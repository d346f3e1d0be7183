"""Streaming mode end to end: plans, streamed changes, bounded vs unbounded inputs, the
errors a stream gives where batch SQL would run, and the CLI's changelog output."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.cli import EXIT_INTERRUPTED
from flowsql.errors import ExecutionError, PlanError
from flowsql.runtime.connectors.datagen import DatagenTable

EPOCH = dt.datetime(2024, 1, 1)


def _events(path: Path, rows: list[tuple[str, int, int]]) -> Path:
    pq.write_table(pa.table({
        "k": [r[0] for r in rows], "v": pa.array([r[1] for r in rows], pa.int64()),
        "ts": pa.array([EPOCH + dt.timedelta(seconds=r[2]) for r in rows],
                       pa.timestamp("ms"))}), path)
    return path


@pytest.fixture()
def session(tmp_path: Path) -> flowsql.Session:
    left = _events(tmp_path / "left.parquet",
                   [("a", 1, 1), ("b", 2, 4), ("a", 3, 11), ("b", 4, 13), ("a", 5, 21)])
    right = _events(tmp_path / "right.parquet",
                    [("a", 10, 2), ("a", 20, 12), ("b", 30, 14), ("b", 40, 22)])
    s = flowsql.connect(**{"execution.runtime-mode": "streaming",
                           "pipeline.auto-watermark-interval": "0"})
    for name, path in (("l", left), ("r", right)):
        s.sql(f"""CREATE TABLE {name} (k STRING, v BIGINT, ts TIMESTAMP(3),
                    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
                  WITH ('connector' = 'filesystem', 'path' = '{path}')""")
    s.sql("""CREATE TABLE gen (id BIGINT, k INT) WITH ('connector' = 'datagen',
               'rows-per-second' = '0', 'fields.k.min' = '1', 'fields.k.max' = '3',
               'seed' = '7')""")
    return s


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def test_filter_and_project_over_a_bounded_table_match_batch_mode(session: flowsql.Session
                                                                  ) -> None:
    query = "SELECT k, v * 2 AS w FROM l WHERE v > 1"
    streamed = session.sql(query).to_arrow()
    session.sql("SET 'execution.runtime-mode' = 'batch'")
    assert _rows(streamed) == _rows(session.sql(query).to_arrow()) == [
        ("a", 6), ("a", 10), ("b", 4), ("b", 8)]


def test_union_all_of_two_watermarked_inputs_fires_windows_on_the_minimum(
        session: flowsql.Session) -> None:
    """Each input alone would run ahead of the other; the union's window aggregate sees
    the minimum of both watermarks, so no row of the slower input is late."""
    session.sql("CREATE VIEW u AS SELECT * FROM l UNION ALL SELECT * FROM r")
    query = """SELECT k, window_start, COUNT(*) AS c, SUM(v) AS s FROM TABLE(TUMBLE(
                 TABLE u, DESCRIPTOR(ts), INTERVAL '10' SECOND))
               GROUP BY k, window_start, window_end"""
    result = session.sql(query)
    assert "WatermarkAssigner" in result.explain()
    at = lambda s: EPOCH + dt.timedelta(seconds=s)  # noqa: E731
    expected = [("a", at(0), 2, 11), ("a", at(10), 2, 23), ("a", at(20), 1, 5),
                ("b", at(0), 1, 2), ("b", at(10), 2, 34), ("b", at(20), 1, 40)]
    assert _rows(result.to_arrow()) == expected
    session.sql("SET 'execution.runtime-mode' = 'batch'")
    assert _rows(session.sql(query).to_arrow()) == expected


@pytest.mark.parametrize("parallelism", ["1", "2"])
def test_union_all_keeps_the_row_kinds_of_updating_inputs(session: flowsql.Session,
                                                           parallelism: str) -> None:
    """A UNION ALL of a GROUP BY (updating) and a scan (insert-only) is updating: the
    retractions of the aggregate stay retractions, so the final rows are those of batch
    mode, and the streamed changes keep their -U / +U kinds."""
    session.set("parallelism.default", parallelism)
    query = ("SELECT k, COUNT(*) AS c FROM l GROUP BY k "
             "UNION ALL SELECT k, COUNT(*) FROM r GROUP BY k "
             "UNION ALL SELECT k, v FROM r WHERE v > 25")
    final = _rows(session.sql(query).to_arrow())
    assert final == [("a", 2), ("a", 3), ("b", 2), ("b", 2), ("b", 30), ("b", 40)]
    changes = [row for batch in session.sql(query).stream() for row in
               zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                   batch.column(2).to_pylist())]
    assert sorted(changes) == sorted(
        [("+I", "a", 1), ("-U", "a", 1), ("+U", "a", 2), ("-U", "a", 2), ("+U", "a", 3),
         ("+I", "b", 1), ("-U", "b", 1), ("+U", "b", 2),
         ("+I", "a", 1), ("-U", "a", 1), ("+U", "a", 2),
         ("+I", "b", 1), ("-U", "b", 1), ("+U", "b", 2),
         ("+I", "b", 30), ("+I", "b", 40)])
    session.set("execution.runtime-mode", "batch")
    assert _rows(session.sql(query).to_arrow()) == final


def test_stream_yields_changes_as_they_come_and_replays_for_bounded_input(
        session: flowsql.Session) -> None:
    result = session.sql("SELECT k, v FROM l WHERE k = 'a'")
    batches = list(result.stream())
    assert all(b.schema.names == ["op", "k", "v"] for b in batches)
    changes = [row for b in batches for row in zip(*b.to_pydict().values())]
    assert changes == [("+I", "a", 1), ("+I", "a", 3), ("+I", "a", 5)]


def test_unbounded_query_streams_until_the_consumer_stops(session: flowsql.Session) -> None:
    result = session.sql("SELECT id, k FROM gen WHERE k = 2")
    assert result.table is None
    with pytest.raises(ExecutionError, match="unbounded table, so it has no final result"):
        result.to_arrow()
    stream = result.stream()
    taken = list(itertools.islice((row for b in stream for row in zip(*b.to_pydict().values())),
                                  5))
    stream.close()  # type: ignore[attr-defined]
    assert len(taken) == 5 and all(op == "+I" and k == 2 for op, _, k in taken)
    # the generator's own first rows with k = 2, in order
    table = session.catalog.get("gen")
    generated = DatagenTable(table.schema, table.options).rows(0, 200).to_pylist()
    assert [(i, k) for _, i, k in taken] == [
        (r["id"], r["k"]) for r in generated if r["k"] == 2][:5]
    assert result.changelog.run is not None and result.changelog.run.cancelled is False
    scan = result.changelog.run.metrics()[-1]
    assert scan["records_out"] >= 5


def test_order_by_on_a_stream_says_why_and_what_to_write(session: flowsql.Session) -> None:
    with pytest.raises(PlanError, match=r"ORDER BY is not supported on a stream.*LIMIT"):
        session.sql("SELECT id FROM gen ORDER BY id")


def test_window_aggregate_rejects_an_updating_input(session: flowsql.Session) -> None:
    with pytest.raises(PlanError, match="needs an insert-only input.*GROUP BY"):
        session.sql("CREATE VIEW latest AS SELECT k, MAX(ts) AS ts FROM l GROUP BY k")
        session.sql("""SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE latest,
                         DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start,
                         window_end""")


def test_spark_engine_refuses_streaming_mode(session: flowsql.Session) -> None:
    session.sql("SET 'execution.engine' = 'spark'")
    with pytest.raises(PlanError, match="spark engine runs bounded queries"):
        session.sql("SELECT k FROM l")


def test_reading_a_sink_only_table_is_an_error(session: flowsql.Session) -> None:
    session.sql("CREATE TABLE out (k STRING) WITH ('connector' = 'blackhole')")
    with pytest.raises(PlanError, match="can only be written to"):
        session.sql("SELECT k FROM out")
    session.sql("SET 'execution.runtime-mode' = 'batch'")
    with pytest.raises(ExecutionError, match="can only be written to"):
        session.sql("SELECT k FROM out")


def test_cli_prints_changes_in_changelog_format(tmp_path: Path) -> None:
    path = _events(tmp_path / "e.parquet", [("a", 1, 1), ("b", 2, 2)])
    script = (f"CREATE TABLE e (k STRING, v BIGINT, ts TIMESTAMP(3)) WITH ("
              f"'connector' = 'filesystem', 'path' = '{path}'); SELECT k, v FROM e")
    done = subprocess.run([sys.executable, "-m", "flowsql", "--set",
                           "execution.runtime-mode=streaming", "--format", "changelog",
                           "-c", script], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-3:] == ["op | k | v", "+I | a | 1", "+I | b | 2"]


@pytest.mark.parametrize("batch_size", ["1", "2", "3", "5", "64"])
def test_chunking_and_input_interleaving_do_not_change_final_rows(
        session: flowsql.Session, batch_size: str) -> None:
    """The batch size re-chunks both inputs, which changes how the runner interleaves them
    and where their watermarks fall; the final rows of a union's window aggregate, a
    changelog GROUP BY and a regular join stay the same."""
    session.sql(f"SET 'execution.batch-size' = '{batch_size}'")
    session.sql("CREATE VIEW u AS SELECT * FROM l UNION ALL SELECT * FROM r")
    windows = _rows(session.sql(
        """SELECT k, window_start, SUM(v) AS s FROM TABLE(TUMBLE(TABLE u, DESCRIPTOR(ts),
             INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end""").to_arrow())
    at = lambda s: EPOCH + dt.timedelta(seconds=s)  # noqa: E731
    assert windows == [("a", at(0), 11), ("a", at(10), 23), ("a", at(20), 5),
                       ("b", at(0), 2), ("b", at(10), 34), ("b", at(20), 40)]
    grouped = _rows(session.sql("SELECT k, COUNT(*) AS c, MAX(v) AS m FROM u GROUP BY k"
                                ).to_arrow())
    assert grouped == [("a", 5, 20), ("b", 4, 40)]
    joined = _rows(session.sql(
        "SELECT l.v AS lv, r.v AS rv FROM l LEFT JOIN r ON l.k = r.k AND r.v > 15").to_arrow())
    assert joined == [(1, 20), (2, 30), (2, 40), (3, 20), (4, 30), (4, 40), (5, 20)]


@pytest.mark.parametrize("parallelism", ["1", "2"])
def test_ctrl_c_stops_an_unbounded_query_cleanly(parallelism: str) -> None:
    """SIGINT while the CLI prints an endless changelog: the query stops, the process
    exits promptly with the interrupted status and no traceback, and leaves no worker."""
    script = ("CREATE TABLE endless (id BIGINT) WITH ('connector' = 'datagen', "
              "'rows-per-second' = '200'); SELECT id FROM endless")
    process = subprocess.Popen(
        [sys.executable, "-m", "flowsql", "--set", "execution.runtime-mode=streaming",
         "--set", f"parallelism.default={parallelism}", "--format", "changelog", "-c", script],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    lines = [process.stdout.readline() for _ in range(5)]  # changes are flowing
    assert lines[0].strip() == "op | id" and all(line.startswith("+I | ") for line in lines[1:])
    found = subprocess.run(["pgrep", "-P", str(process.pid)], capture_output=True, text=True,
                           check=False)
    workers = [int(pid) for pid in found.stdout.split()]
    assert len(workers) == (0 if parallelism == "1" else 2)
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == EXIT_INTERRUPTED, stderr
    assert "Traceback" not in stderr
    deadline = time.monotonic() + 10
    while workers and time.monotonic() < deadline:
        workers = [pid for pid in workers if _alive(pid)]
        time.sleep(0.05)
    assert workers == [], "worker processes outlived the interrupted CLI"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
