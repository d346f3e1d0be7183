"""The socket source's write-ahead log, driven operator by operator (no worker processes):
a source restored from a snapshot replays exactly what it received after the snapshot --
records split across chunks included, the incomplete last record of the connection the
failure ended dropped -- then reads a new connection; a second failure after the replay
replays from the newer position; a torn last frame (a crash inside the write) is not
replayed; segments no retained checkpoint needs are deleted."""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.physical import TableScanExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.source.socket_scan import (
    INCOMPLETE_RECORDS_DROPPED,
    SocketScanOperator,
)
from tests.harness.line_server import LineServer

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string())])
CLOSE = b""  # tells the server to close the connection


class Feed:
    """A server whose connections send what the test ``put``s: a connection sends the
    chunks put since the previous connection was closed (``close``), so chunks put before
    the source connects wait for it."""

    def __init__(self) -> None:
        self.current: queue.Queue[bytes] = queue.Queue()
        self.server = LineServer(self._serve)

    def put(self, chunk: bytes) -> None:
        self.current.put(chunk)

    def close(self) -> None:
        """Close the current connection; later chunks go to the next one."""
        self.current.put(CLOSE)
        self.current = queue.Queue()

    def _serve(self, number: int, connection: socket.socket, stop: threading.Event) -> None:
        chunks = self.current
        while not stop.is_set():
            try:
                chunk = chunks.get(timeout=0.05)
            except queue.Empty:
                continue
            if chunk == CLOSE:
                return
            connection.sendall(chunk)


@pytest.fixture
def feed() -> Iterator[Feed]:
    feed = Feed()
    with feed.server:
        yield feed


def _node(port: int) -> TableScanExec:
    options = {"connector": "socket", "hostname": "127.0.0.1", "port": str(port),
               "format": "csv"}
    fields = (Field.fresh("id", T.INT32), Field.fresh("name", T.STRING))
    return TableScanExec(TableEntry("lines", SCHEMA, options), fields, (), 10.0)


def _opened(port: int, checkpoints: Path, attempt: int = 0, retained: int = 1,
            wal: bool = True) -> SocketScanOperator:
    operator = SocketScanOperator(_node(port))
    settings = {"execution.runtime-mode": "streaming",
                "execution.checkpointing.interval": "1 s",
                "execution.checkpointing.dir": str(checkpoints),
                "execution.checkpointing.num-retained": str(retained),
                "execution.source.wal.enabled": str(wal).lower()}
    operator.open(OperatorContext("socket", settings, job_id="job-1", attempt=attempt,
                                  checkpointing=True, operator_id="stage-0/0"))
    return operator


def _poll(operator: SocketScanOperator, count: int, timeout_s: float = 10.0
          ) -> list[tuple[int, str]]:
    """Poll until ``count`` rows came (then once more, to see that nothing else does)."""
    rows: list[tuple[int, str]] = []
    deadline = time.monotonic() + timeout_s
    while len(rows) < count:
        assert time.monotonic() < deadline, f"only {rows}"
        for batch in operator.poll(0.05):
            rows += list(zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()))
    for batch in operator.poll(0.2):
        rows += list(zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()))
    return rows


def _crash(operator: SocketScanOperator) -> None:
    """What a kill leaves: the connection closed by the kernel, the log as written."""
    operator._connection.close()  # noqa: SLF001 -- the kernel closes a killed socket


def _segments(checkpoints: Path) -> list[Path]:
    return sorted((checkpoints / "job-1" / "wal").glob("*/0/segment-*.wal"))


def test_a_restore_replays_what_was_received_after_the_snapshot(feed: Feed,
                                                                 tmp_path: Path) -> None:
    first = _opened(feed.server.port, tmp_path)
    feed.put(b"1,a\n2,b\n3,")
    assert _poll(first, 2) == [(1, "a"), (2, "b")]
    state = first.snapshot_state(1)
    first.notify_checkpoint_complete(1)
    feed.put(b"c\n4,")
    feed.put(b"d\n5,e")  # 5,e is incomplete when the failure comes
    assert _poll(first, 2) == [(3, "c"), (4, "d")]
    _crash(first)
    feed.close()

    second = _opened(feed.server.port, tmp_path, attempt=1)
    second.restore_state(state)
    # 3 (begun before the snapshot) and 4 again: the sink dropped them with the failed
    # attempt's uncommitted output; the incomplete 5 is dropped
    assert _poll(second, 2) == [(3, "c"), (4, "d")]
    assert second.context.metrics[INCOMPLETE_RECORDS_DROPPED] == 1
    feed.put(b"6,f\n7,")
    assert _poll(second, 1) == [(6, "f")]
    later = second.snapshot_state(2)
    second.notify_checkpoint_complete(2)
    feed.put(b"g\n8,h\n")
    assert _poll(second, 2) == [(7, "g"), (8, "h")]
    _crash(second)
    feed.close()

    third = _opened(feed.server.port, tmp_path, attempt=2)
    third.restore_state(later)
    assert _poll(third, 2) == [(7, "g"), (8, "h")]
    feed.put(b"9,i\n")
    assert _poll(third, 1) == [(9, "i")]
    third.close()


def test_a_restart_before_the_first_checkpoint_replays_the_whole_log(
        feed: Feed, tmp_path: Path) -> None:
    first = _opened(feed.server.port, tmp_path)
    feed.put(b"1,a\n2,")
    assert _poll(first, 1) == [(1, "a")]
    feed.put(b"b\n3,c\n")
    assert _poll(first, 2) == [(2, "b"), (3, "c")]
    _crash(first)
    feed.close()
    # no checkpoint completed: nothing was committed, and the restart restores nothing
    second = _opened(feed.server.port, tmp_path, attempt=1)
    assert _poll(second, 3) == [(1, "a"), (2, "b"), (3, "c")]
    feed.put(b"4,d\n")
    assert _poll(second, 1) == [(4, "d")]
    second.close()
    # a new job (attempt 0) never replays a log it finds
    fresh = _opened(feed.server.port, tmp_path)
    feed.close()
    feed.put(b"5,e\n")
    assert _poll(fresh, 1) == [(5, "e")]
    fresh.close()


def test_a_torn_last_frame_is_not_replayed(feed: Feed, tmp_path: Path) -> None:
    first = _opened(feed.server.port, tmp_path)
    feed.put(b"1,a\n")
    assert _poll(first, 1) == [(1, "a")]
    state = first.snapshot_state(1)
    feed.put(b"2,b\n")
    assert _poll(first, 1) == [(2, "b")]
    feed.put(b"3,c\n4,d\n")
    assert _poll(first, 2) == [(3, "c"), (4, "d")]
    _crash(first)
    feed.close()
    # the kill came inside the write of the last chunk: its frame is cut short (in a real
    # crash its records were never emitted, the write had not returned)
    last = _segments(tmp_path)[-1]
    last.write_bytes(last.read_bytes()[:-3])

    second = _opened(feed.server.port, tmp_path, attempt=1)
    second.restore_state(state)
    assert _poll(second, 1) == [(2, "b")]
    second.close()


def test_segments_are_deleted_once_no_retained_checkpoint_needs_them(
        feed: Feed, tmp_path: Path) -> None:
    source = _opened(feed.server.port, tmp_path, retained=2)
    states = {}
    for checkpoint in range(1, 6):
        feed.put(f"{checkpoint},x\n".encode())
        assert _poll(source, 1) == [(checkpoint, "x")]
        states[checkpoint] = source.snapshot_state(checkpoint)
        source.notify_checkpoint_complete(checkpoint)
    # a segment per checkpoint interval; the two newest checkpoints need the last two
    names = [p.name for p in _segments(tmp_path)]
    assert len(names) == 2, names
    _crash(source)
    feed.close()
    restored = _opened(feed.server.port, tmp_path, attempt=1)
    restored.restore_state(states[4])
    assert _poll(restored, 1) == [(5, "x")]
    restored.close()


def test_with_the_log_off_a_restore_replays_nothing(feed: Feed, tmp_path: Path) -> None:
    first = _opened(feed.server.port, tmp_path, wal=False)
    feed.put(b"1,a\n")
    assert _poll(first, 1) == [(1, "a")]
    state = first.snapshot_state(1)
    feed.put(b"2,b\n")
    assert _poll(first, 1) == [(2, "b")]
    _crash(first)
    feed.close()
    second = _opened(feed.server.port, tmp_path, attempt=1, wal=False)
    second.restore_state(state)
    feed.put(b"3,c\n")
    assert _poll(second, 1) == [(3, "c")]  # 2 is lost: nothing is guaranteed
    second.close()
    assert not (tmp_path / "job-1" / "wal").exists()
