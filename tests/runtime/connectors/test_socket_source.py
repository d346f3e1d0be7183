"""The ``socket`` source end to end, against a TCP server in the test: streaming SELECT
and INSERT into an exactly-once filesystem sink (full expected rows), parallelism 2 (only
subtask 0 reads), format errors with the server and the record's place, refused
connections, batch mode, DDL checks, and where the write-ahead log is (not) written."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import flowsql
from flowsql.errors import CatalogError, DataError, ExecutionError, OptionError
from flowsql.runtime.checkpoint.wal.location import log_location
from tests.harness.chaos import committed_rows
from tests.harness.line_server import LineServer, send_then_hold

ROWS = [(i, f"name {i}", i * 1.5) for i in range(1, 301)]


def _encoded(fmt: str) -> bytes:
    if fmt == "csv":
        lines = [f"{i},{name},{x}" for i, name, x in ROWS]
    elif fmt == "json":
        lines = [json.dumps({"id": i, "name": name, "x": x}) for i, name, x in ROWS]
    else:
        lines = [name for _, name, _ in ROWS]
    return "\n".join(lines).encode() + b"\n"


def _chunks(data: bytes, size: int = 997) -> list[bytes]:
    """Cut anywhere, records split across chunks included."""
    return [data[start:start + size] for start in range(0, len(data), size)]


def _session(**settings: str) -> Any:
    return flowsql.connect(**{"execution.runtime-mode": "streaming", **settings})


def _table(session: Any, port: int, fmt: str, extra: str = "") -> None:
    columns = "name STRING" if fmt == "raw" else "id INT, name STRING, x DOUBLE"
    session.sql(f"CREATE TABLE lines ({columns}) WITH ('connector' = 'socket', "
                f"'hostname' = '127.0.0.1', 'port' = '{port}', 'format' = '{fmt}'{extra})")


def _streamed(session: Any, query: str, count: int, timeout_s: float = 60.0
              ) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    for batch in session.sql(query).stream():
        rows += batch.to_pylist()
        if len(rows) >= count or time.monotonic() > deadline:
            break
    return rows


@pytest.mark.parametrize("fmt", ["csv", "json", "raw"])
def test_streaming_select_reads_every_record(fmt: str) -> None:
    with LineServer(send_then_hold(_chunks(_encoded(fmt)))) as server:
        session = _session()
        try:
            _table(session, server.port, fmt)
            if fmt == "raw":
                rows = _streamed(session, "SELECT name FROM lines", len(ROWS))
                assert [r["name"] for r in rows] == [name for _, name, _ in ROWS]
            else:
                rows = _streamed(session, "SELECT id, x, name FROM lines WHERE id % 3 = 0",
                                 len(ROWS) // 3)
                assert [(r["op"], r["id"], r["x"], r["name"]) for r in rows] == [
                    ("+I", i, x, name) for i, name, x in ROWS if i % 3 == 0]
        finally:
            session.close()


def test_byte_delimiter_and_the_last_record_when_the_server_closes() -> None:
    data = b"1,a;2,b;;3,c"  # no delimiter after the last record: it ends with the stream

    def serve(number: int, connection: Any, stop: Any) -> None:
        if number == 1:
            connection.sendall(data)
            return  # closes the connection
        stop.wait()

    with LineServer(serve) as server:
        session = _session()
        try:
            session.sql(f"CREATE TABLE t (id INT, name STRING) WITH ('connector' = 'socket', "
                        f"'hostname' = '127.0.0.1', 'port' = '{server.port}', "
                        f"'format' = 'csv', 'byte-delimiter' = '59')")
            rows = _streamed(session, "SELECT id, name FROM t", 3)
            assert [(r["id"], r["name"]) for r in rows] == [(1, "a"), (2, "b"), (3, "c")]
        finally:
            session.close()


def test_only_subtask_zero_reads_at_parallelism_2() -> None:
    with LineServer(send_then_hold(_chunks(_encoded("csv")))) as server:
        session = _session(**{"parallelism.default": "2"})
        try:
            _table(session, server.port, "csv")
            rows = _streamed(session, "SELECT id FROM lines", len(ROWS))
            time.sleep(0.5)
            assert sorted(r["id"] for r in rows) == [i for i, _, _ in ROWS]
            assert server.accepted == 1
        finally:
            session.close()


def _wait_for_rows(out: Path, count: int, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(committed_rows(out).values()) < count:
        assert time.monotonic() < deadline, f"{sum(committed_rows(out).values())} rows"
        time.sleep(0.2)


def _wal_segments(checkpoints: Path) -> list[Path]:
    return sorted(checkpoints.glob("*/wal/*/*/segment-*.wal"))


@pytest.mark.parametrize("parallelism", [1, 2])
def test_insert_into_an_exactly_once_file_sink_with_the_log(tmp_path: Path,
                                                           parallelism: int) -> None:
    checkpoints, out = tmp_path / "checkpoints", tmp_path / "out"
    chunks = _chunks(_encoded("csv"), 64)
    with LineServer(send_then_hold(chunks)) as server:
        session = _session(**{"parallelism.default": str(parallelism),
                              "execution.checkpointing.interval": "200 ms",
                              "execution.checkpointing.dir": str(checkpoints)})
        try:
            _table(session, server.port, "csv")
            session.sql(f"CREATE TABLE out_t (id INT, name STRING, x DOUBLE) WITH ("
                        f"'connector' = 'filesystem', 'path' = '{out}', 'format' = 'parquet')")
            job = session.sql("INSERT INTO out_t SELECT id, name, x FROM lines").job
            _wait_for_rows(out, len(ROWS))
            time.sleep(1.0)  # more checkpoints: segments before them are deleted
            segments = _wal_segments(checkpoints)
            job.cancel()
            assert job.wait(30) == "CANCELED"
        finally:
            session.close()
    assert committed_rows(out) == Counter(ROWS)
    assert not list(out.glob(".*"))
    # one log, of subtask 0, whose early segments went with their checkpoints
    assert segments and {p.parent.name for p in segments} == {"0"}
    assert len(segments) <= 3


def test_a_bad_record_names_the_server_and_its_place() -> None:
    data = b"1,a,1.0\n2,b,2.0\n3,c,not a number\n"
    with LineServer(send_then_hold([data])) as server:
        session = _session()
        try:
            _table(session, server.port, "csv")
            with pytest.raises(DataError) as failure:
                _streamed(session, "SELECT id FROM lines", 3)
        finally:
            session.close()
    assert f"socket source 127.0.0.1:{server.port}: record 3 (byte 16)" in str(failure.value)


def test_a_refused_connection_fails_after_the_reconnect_timeout() -> None:
    with LineServer(send_then_hold([])) as server:
        port = server.port
    session = _session()  # nothing listens on ``port`` any more
    try:
        _table(session, port, "csv", ", 'reconnect-timeout' = '1 s'")
        started = time.monotonic()
        with pytest.raises(ExecutionError, match=(
                f"socket source 127.0.0.1:{port}: no connection for .* s "
                r"\('reconnect-timeout' is 1 s\)")):
            _streamed(session, "SELECT id FROM lines", 1)
        assert time.monotonic() - started < 30
    finally:
        session.close()


def test_batch_mode_refuses_the_unbounded_source() -> None:
    session = flowsql.connect()
    try:
        _table(session, 9, "csv")
        with pytest.raises(ExecutionError, match="socket table 'lines' is unbounded"):
            session.sql("SELECT * FROM lines").to_arrow()
    finally:
        session.close()


def test_table_options_are_checked_by_the_ddl() -> None:
    session = flowsql.connect()
    try:
        with pytest.raises(CatalogError, match="raw format needs exactly one column"):
            session.sql("CREATE TABLE a (x INT, y INT) WITH ('connector' = 'socket', "
                        "'hostname' = 'h', 'port' = '1')")
        with pytest.raises(OptionError, match="needs 'port'"):
            session.sql("CREATE TABLE b (s STRING) WITH ('connector' = 'socket', "
                        "'hostname' = 'h')")
        with pytest.raises(OptionError, match="at most 255"):
            session.sql("CREATE TABLE c (s STRING) WITH ('connector' = 'socket', "
                        "'hostname' = 'h', 'port' = '1', 'byte-delimiter' = '256')")
        with pytest.raises(OptionError, match="allowed: json, csv, raw"):
            session.sql("CREATE TABLE d (s STRING) WITH ('connector' = 'socket', "
                        "'hostname' = 'h', 'port' = '1', 'format' = 'avro')")
    finally:
        session.close()


def test_no_log_without_checkpointing_or_when_turned_off(tmp_path: Path) -> None:
    checkpoints = str(tmp_path / "checkpoints")
    on = {"execution.checkpointing.interval": "1 s", "execution.checkpointing.dir": checkpoints}
    assert log_location(on, checkpointing=True) is not None
    assert log_location(on, checkpointing=False) is None
    assert log_location({**on, "execution.source.wal.enabled": "false"}, True) is None
    assert log_location({"execution.checkpointing.dir": checkpoints}, True) is None

    for settings in ({"execution.checkpointing.dir": checkpoints},  # no interval: off
                     {**on, "execution.source.wal.enabled": "false"}):
        with LineServer(send_then_hold(_chunks(_encoded("csv")))) as server:
            session = _session(**settings)
            try:
                _table(session, server.port, "csv")
                rows = _streamed(session, "SELECT id FROM lines", len(ROWS))
                assert [r["id"] for r in rows] == [i for i, _, _ in ROWS]
            finally:
                session.close()
        assert not list(Path(checkpoints).glob("*/wal"))


def test_watermark_clause_and_event_time_windows() -> None:
    """A WATERMARK on a socket table drives a TUMBLE window as on any source: the windows
    the watermark passed fire with their full contents."""
    events = [(1, "2024-01-01 00:00:00.100"), (2, "2024-01-01 00:00:00.900"),
              (3, "2024-01-01 00:00:01.200"), (4, "2024-01-01 00:00:01.300"),
              (5, "2024-01-01 00:00:02.500"),  # passes 00:00:02: the first two windows fire
              (6, "2024-01-01 00:00:05.000")]  # passes 00:00:03 as well
    data = "".join(f"{v},{ts}\n" for v, ts in events).encode()
    with LineServer(send_then_hold(_chunks(data, 50))) as server:
        session = _session()
        try:
            session.sql(f"CREATE TABLE ev (v INT, ts TIMESTAMP(3), "
                        f"WATERMARK FOR ts AS ts - INTERVAL '0.5' SECOND) WITH ("
                        f"'connector' = 'socket', 'hostname' = '127.0.0.1', "
                        f"'port' = '{server.port}', 'format' = 'csv')")
            rows = _streamed(session, "SELECT window_start, COUNT(*) AS n, SUM(v) AS s FROM "
                             "TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' SECOND)) "
                             "GROUP BY window_start, window_end", 3)
        finally:
            session.close()
    assert [(str(r["window_start"]), r["n"], r["s"]) for r in rows] == [
        ("2024-01-01 00:00:00", 2, 3), ("2024-01-01 00:00:01", 2, 7),
        ("2024-01-01 00:00:02", 1, 5)]
