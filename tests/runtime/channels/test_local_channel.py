"""In-process channels: FIFO over batches and events, bounded by their capacity."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest

from flowsql.runtime.channels import ChannelError, LocalChannel
from flowsql.runtime.events import CheckpointBarrier, EndOfInput, Watermark


def test_fifo_with_interleaved_control_events() -> None:
    channel = LocalChannel("c", capacity=100)
    sent: list[object] = []
    for i in range(20):
        sent.append(pa.record_batch({"x": [i]}))
        if i % 3 == 0:
            sent.append(Watermark(i))
        if i == 10:
            sent.append(CheckpointBarrier(1, 99))
    sent.append(EndOfInput())
    for element in sent:
        channel.send(element)  # type: ignore[arg-type]
    received = []
    while (element := channel.poll()) is not None:
        received.append(element)
    assert received == sent
    assert all(a is b for a, b in zip(received, sent))  # handed over, never copied


def test_slow_consumer_bounds_a_fast_producer() -> None:
    capacity, total = 3, 300
    channel = LocalChannel("c", capacity=capacity)
    produced = 0

    def produce() -> None:
        nonlocal produced
        for i in range(total):
            channel.send(pa.record_batch({"x": [i]}))
            produced += 1
        channel.send(EndOfInput())

    producer = threading.Thread(target=produce)
    producer.start()
    consumed, max_ahead, values = 0, 0, []
    while True:
        element = channel.poll()
        if element is None:
            time.sleep(0.001)
            continue
        if isinstance(element, EndOfInput):
            break
        consumed += 1
        values.append(element.column("x")[0].as_py())
        max_ahead = max(max_ahead, produced - consumed)
        if consumed % 10 == 0:
            time.sleep(0.01)  # the slow consumer
    producer.join(10)
    assert values == list(range(total))
    assert max_ahead <= capacity
    assert channel.inbox.max_queued == capacity  # the producer did run ahead, up to the bound


def test_abort_breaks_both_ends() -> None:
    channel = LocalChannel("c", capacity=1)
    channel.send(pa.record_batch({"x": [1]}))
    channel.abort("cancelled")
    with pytest.raises(ChannelError, match="cancelled"):
        channel.send(pa.record_batch({"x": [2]}))
    assert channel.poll() is not None  # what arrived before the break stays readable
    with pytest.raises(ChannelError, match="cancelled"):
        channel.poll()
