"""Remote channels: a sender in another process, Arrow IPC frames over TCP on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from flowsql.runtime.channels import (
    BufferedWriter,
    ChannelError,
    ChannelServer,
    ChannelSettings,
    InputGate,
    RemoteInputChannel,
    RemoteOutputChannel,
)
from flowsql.runtime.events import BarrierKind, CheckpointBarrier, EndOfInput, Watermark

PEER = Path(__file__).with_name("channel_peer.py")


def start_peer(address: tuple[str, int], channel: str, batches: int, rows: int,
               watermark_every: int) -> subprocess.Popen[str]:
    spec = {"address": list(address), "channel": channel, "batches": batches, "rows": rows,
            "watermark_every": watermark_every}
    return subprocess.Popen([sys.executable, str(PEER), json.dumps(spec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def expected_shape(batches: int, watermark_every: int) -> list[object]:
    """What channel_peer sends, with batches reduced to their index."""
    shape: list[object] = []
    for index in range(batches):
        shape.append(index)
        if (index + 1) % watermark_every == 0:
            shape.append(Watermark(index))
        if index == batches // 2:
            shape.append(CheckpointBarrier(index, 1234, BarrierKind.SAVEPOINT))
    shape.append(EndOfInput())
    return shape


def read_all(gate: InputGate, delay: float = 0.0) -> list[object]:
    out = []
    while not gate.finished:
        item = gate.next(timeout=60)
        assert item is not None, "no element within 60 s"
        out.append(item[1])
        if delay:
            time.sleep(delay)
    return out


def finish_peer(peer: subprocess.Popen[str]) -> dict[str, int]:
    stdout, stderr = peer.communicate(timeout=60)
    assert peer.returncode == 0, stderr
    return json.loads(stdout)


def test_fifo_across_processes_with_interleaved_events() -> None:
    server = ChannelServer()
    try:
        peer = start_peer(server.address, "job-1/edge-0/0->0", batches=25, rows=40,
                          watermark_every=4)
        time.sleep(0.3)  # the connection may well arrive before the channel is registered
        channel = RemoteInputChannel("job-1/edge-0/0->0", capacity=4)
        server.register(channel)
        received = read_all(InputGate([channel]))
        finish_peer(peer)
    finally:
        server.close()
    batches = [e for e in received if isinstance(e, pa.RecordBatch)]
    shape = [e if not isinstance(e, pa.RecordBatch) else i
             for i, e in zip(np.cumsum([isinstance(e, pa.RecordBatch) for e in received]) - 1,
                             received)]
    assert shape == expected_shape(25, 4)
    table = pa.Table.from_batches(batches)
    assert table.column("seq").to_pylist() == list(range(25 * 40))
    assert pa.types.is_dictionary(table.schema.field("name").type)
    assert table.schema.field("tag").type == pa.string_view()
    assert table.column("name").to_pylist()[:4] == ["n0", "n1", "n2", "n0"]
    assert batches[7].column("tag").to_pylist() == ["t7"] * 40


def test_slow_consumer_back_pressures_a_remote_producer() -> None:
    credits, batches, rows = 2, 120, 5000
    server = ChannelServer()
    try:
        channel = RemoteInputChannel("bp", capacity=credits)
        server.register(channel)
        peer = start_peer(server.address, "bp", batches=batches, rows=rows,
                          watermark_every=10**6)
        received = read_all(InputGate([channel]), delay=0.005)
        stats = finish_peer(peer)
    finally:
        server.close()
    data = [e for e in received if isinstance(e, pa.RecordBatch)]
    assert sum(b.num_rows for b in data) == batches * rows
    assert channel.inbox.received == len(received)
    # never more queued than granted, in count and hence in bytes
    assert channel.inbox.max_queued <= credits
    assert channel.inbox.max_queued_bytes <= credits * max(b.nbytes for b in data)
    assert stats["blocked_sends"] > 0  # the producer really was held back


def test_a_killed_sender_breaks_the_channel_promptly() -> None:
    server = ChannelServer()
    try:
        channel = RemoteInputChannel("dies", capacity=2)
        server.register(channel)
        peer = start_peer(server.address, "dies", batches=10**6, rows=10, watermark_every=10**6)
        gate = InputGate([channel])
        assert gate.next(timeout=60) is not None  # connected and sending
        peer.kill()
        peer.communicate(timeout=30)  # reaps it and closes its pipes
        started = time.monotonic()
        with pytest.raises(ChannelError, match="before end of input|connection"):
            while gate.next(timeout=30) is not None:
                pass
        assert time.monotonic() - started < 20
    finally:
        server.close()


def test_aborting_the_receiver_fails_a_blocked_sender() -> None:
    server = ChannelServer()
    try:
        receiver = RemoteInputChannel("abort", capacity=1)
        server.register(receiver)
        sender = RemoteOutputChannel("abort", server.address)
        errors: list[Exception] = []

        def produce() -> None:
            try:
                for i in range(100):
                    sender.send(pa.record_batch({"x": [i]}))
            except ChannelError as exc:
                errors.append(exc)

        thread = threading.Thread(target=produce)
        thread.start()
        deadline = time.monotonic() + 30
        while receiver.inbox.received == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        receiver.abort("the consumer failed")
        thread.join(30)
        assert not thread.is_alive() and errors
        with pytest.raises(ChannelError):
            receiver.poll()
            receiver.poll()
        sender.abort("the test is over")  # a failed sender still owns its socket
    finally:
        server.close()


def test_buffers_are_assembled_before_crossing_the_socket() -> None:
    server = ChannelServer()
    try:
        receiver = RemoteInputChannel("rt", capacity=3)
        server.register(receiver)
        writer = BufferedWriter(RemoteOutputChannel("rt", server.address),
                                ChannelSettings(buffer_timeout_ms=-1, buffer_rows=100))

        def produce() -> None:
            for i in range(50):
                writer.write(pa.record_batch({"x": [i] * 10}))
            writer.finish()

        producer = threading.Thread(target=produce)
        producer.start()
        received = read_all(InputGate([receiver]))
        producer.join(30)
    finally:
        server.close()
    assert [b.num_rows for b in received[:-1]] == [100] * 5
    assert pa.concat_batches(received[:-1]).column("x").to_pylist() == [
        i for i in range(50) for _ in range(10)]
    assert received[-1] == EndOfInput()
