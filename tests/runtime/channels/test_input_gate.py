"""The input gate: many channels, one reader, and channels that can be held back."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.channels import (
    ChannelError,
    ChannelServer,
    InputGate,
    LocalChannel,
    RemoteInputChannel,
)
from flowsql.runtime.events import CheckpointBarrier, EndOfInput, Watermark

PEER = Path(__file__).with_name("channel_peer.py")


def one(i: int) -> pa.RecordBatch:
    return pa.record_batch({"x": [i]})


def test_reads_all_channels_fairly_and_tracks_their_end() -> None:
    a, b = LocalChannel("a", 100), LocalChannel("b", 100)
    for i in range(3):
        a.send(one(i))
        b.send(one(10 + i))
    a.send(EndOfInput())
    b.send(Watermark(7))
    gate = InputGate([a, b])
    got = [gate.next(timeout=5) for _ in range(8)]
    assert [index for index, _ in got] == [0, 1, 0, 1, 0, 1, 0, 1]  # round-robin
    assert gate.is_finished(0) and not gate.is_finished(1) and not gate.finished
    assert got[7] == (1, Watermark(7))
    assert gate.next(timeout=0.1) is None  # nothing yet: a timeout, not the end
    b.send(EndOfInput())
    assert gate.next(timeout=5) == (1, EndOfInput())
    assert gate.finished and gate.next(timeout=5) is None


def test_a_waiting_gate_wakes_when_a_producer_sends() -> None:
    a, b = LocalChannel("a", 4), LocalChannel("b", 4)
    gate = InputGate([a, b])
    threading.Timer(0.2, lambda: b.send(one(1))).start()
    item = gate.next(timeout=30)
    assert item is not None and item[0] == 1


def test_blocking_one_remote_input_back_pressures_it_while_a_local_one_flows() -> None:
    """Barrier alignment in miniature: hold the remote input after its barrier, keep
    reading the local one to its end, then release the remote input."""
    server = ChannelServer()
    try:
        remote = RemoteInputChannel("held", capacity=2)
        server.register(remote)
        spec = {"address": list(server.address), "channel": "held", "batches": 40, "rows": 10,
                "watermark_every": 10**6}
        peer = subprocess.Popen([sys.executable, str(PEER), json.dumps(spec)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        local = LocalChannel("flowing", capacity=2)
        local_total = 200

        def produce_local() -> None:
            for i in range(local_total):
                local.send(one(i))
            local.send(EndOfInput())

        gate = InputGate([remote, local])
        remote_before = 0
        while True:  # read until the remote barrier (after batch 20), then hold the remote
            item = gate.next(timeout=60)
            assert item is not None and item[0] == 0
            if isinstance(item[1], CheckpointBarrier):
                gate.block(0)
                break
            remote_before += 1
        received_when_blocked = remote.inbox.received
        producer = threading.Thread(target=produce_local)  # the local input starts flowing now
        producer.start()
        local_values = []
        while not gate.is_finished(1):
            item = gate.next(timeout=60)
            assert item is not None and item[0] == 1, "a blocked input must not deliver"
            if isinstance(item[1], pa.RecordBatch):
                local_values.append(item[1].column("x")[0].as_py())
        time.sleep(0.3)
        # the held input queued at most its credits, and its sender is waiting for more
        assert remote.inbox.received - received_when_blocked <= 2
        assert peer.poll() is None
        with pytest.raises(ExecutionError, match="blocked"):
            gate.next(timeout=1)
        gate.unblock(0)
        remote_rows = []
        while not gate.finished:
            item = gate.next(timeout=60)
            assert item is not None and item[0] == 0
            if isinstance(item[1], pa.RecordBatch):
                remote_rows.extend(item[1].column("seq").to_pylist())
        stdout, stderr = peer.communicate(timeout=60)
        assert peer.returncode == 0, stderr
        producer.join(30)
    finally:
        server.close()
    assert remote_before == 21
    assert local_values == list(range(local_total))
    assert remote_rows == list(range(210, 400))
    assert json.loads(stdout)["blocked_sends"] > 0


def test_a_broken_channel_surfaces_through_the_gate() -> None:
    a, b = LocalChannel("a", 4), LocalChannel("b", 4)
    gate = InputGate([a, b])
    threading.Timer(0.2, lambda: b.abort("upstream task failed")).start()
    with pytest.raises(ChannelError, match="upstream task failed"):
        gate.next(timeout=30)
