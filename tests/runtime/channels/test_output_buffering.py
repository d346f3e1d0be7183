"""Output buffering: size, timeout and events decide when a buffer leaves."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from flowsql.errors import FlowSQLError
from flowsql.runtime.channels import BufferedWriter, ChannelError, ChannelSettings, LocalChannel
from flowsql.runtime.events import EndOfInput, Watermark


def rows(start: int, count: int) -> pa.RecordBatch:
    return pa.record_batch({"x": pa.array(range(start, start + count), pa.int64())})


def drain(channel: LocalChannel) -> list[object]:
    out = []
    while (element := channel.poll()) is not None:
        out.append(element)
    return out


def test_timeout_zero_sends_every_batch_at_once() -> None:
    channel = LocalChannel("c", capacity=10)
    writer = BufferedWriter(channel, ChannelSettings(buffer_timeout_ms=0))
    writer.write(rows(0, 3))
    writer.write(rows(3, 2))
    assert [b.num_rows for b in drain(channel)] == [3, 2]


def test_full_buffers_go_out_and_events_flush_the_rest_first() -> None:
    channel = LocalChannel("c", capacity=10)
    writer = BufferedWriter(channel, ChannelSettings(buffer_timeout_ms=-1, buffer_rows=100))
    for i in range(7):
        writer.write(rows(30 * i, 30))
    out = drain(channel)
    assert len(out) == 1 and out[0].column("x").to_pylist() == list(range(120))
    writer.emit(Watermark(5))
    writer.write(rows(210, 1))
    writer.finish()
    out = drain(channel)
    assert isinstance(out[0], pa.RecordBatch)
    assert out[0].column("x").to_pylist() == list(range(120, 210))
    assert out[1] == Watermark(5)
    assert out[2].column("x").to_pylist() == [210]
    assert out[3] == EndOfInput()
    assert writer.buffers_sent == 3


def test_byte_size_bounds_a_buffer() -> None:
    channel = LocalChannel("c", capacity=10)
    writer = BufferedWriter(channel, ChannelSettings(buffer_timeout_ms=-1, buffer_bytes=1000))
    for i in range(5):
        writer.write(rows(50 * i, 50))  # 400 bytes each
    assert [b.num_rows for b in drain(channel)] == [150]


def test_buffer_timeout_flushes_a_partial_buffer() -> None:
    channel = LocalChannel("c", capacity=10)
    writer = BufferedWriter(channel, ChannelSettings(buffer_timeout_ms=1000, buffer_rows=10**6))
    writer.write(rows(0, 10))
    assert channel.poll() is None  # waits for more rows, up to the timeout
    deadline = time.monotonic() + 20
    while (element := channel.poll()) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert isinstance(element, pa.RecordBatch) and element.num_rows == 10
    writer.write(rows(10, 5))  # a second partial buffer is timed from its own first batch
    deadline = time.monotonic() + 20
    while (element := channel.poll()) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert isinstance(element, pa.RecordBatch) and element.column("x").to_pylist() == list(
        range(10, 15))
    writer.finish()


def test_without_timeout_a_partial_buffer_waits_for_an_explicit_flush() -> None:
    channel = LocalChannel("c", capacity=10)
    writer = BufferedWriter(channel, ChannelSettings(buffer_timeout_ms=-1))
    writer.write(rows(0, 10))
    time.sleep(0.3)
    assert channel.poll() is None
    writer.flush()
    assert channel.poll().num_rows == 10  # type: ignore[union-attr]


def test_abort_wakes_a_writer_blocked_on_credits() -> None:
    channel = LocalChannel("c", capacity=1)
    writer = BufferedWriter(channel, ChannelSettings(buffer_timeout_ms=0))
    writer.write(rows(0, 1))
    errors: list[Exception] = []

    def produce() -> None:
        try:
            writer.write(rows(1, 1))
        except ChannelError as exc:
            errors.append(exc)

    thread = threading.Thread(target=produce)
    thread.start()
    time.sleep(0.2)
    assert thread.is_alive()  # blocked: the only credit is taken
    writer.abort("job cancelled")
    thread.join(10)
    assert not thread.is_alive()
    assert errors and "job cancelled" in str(errors[0])


def test_settings_are_parsed_from_session_settings() -> None:
    parsed = ChannelSettings.from_settings({
        "execution.buffer-timeout": "0", "execution.buffer-size": "64kb",
        "execution.buffer-rows": "100", "execution.channel-credits": "2"})
    assert parsed == ChannelSettings(buffer_timeout_ms=0, buffer_bytes=65536, buffer_rows=100,
                                     credits=2)
    assert ChannelSettings.from_settings({"execution.buffer-timeout": "2s"}).buffer_timeout_ms \
        == 2000
    assert ChannelSettings.from_settings({}) == ChannelSettings()
    with pytest.raises(FlowSQLError, match="execution.buffer-timeout"):
        ChannelSettings.from_settings({"execution.buffer-timeout": "soon"})
    with pytest.raises(FlowSQLError, match="execution.channel-credits"):
        ChannelSettings.from_settings({"execution.channel-credits": "0"})
