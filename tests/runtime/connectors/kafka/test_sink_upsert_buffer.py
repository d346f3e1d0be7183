"""upsert-kafka's ``sink.buffer-flush.*``: the last change per key, flushed when full, after
the interval, at snapshots and at the end of the input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import CatalogError
from flowsql.runtime.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from flowsql.runtime.connectors.kafka.records import RECORDS
from flowsql.runtime.connectors.kafka.upsert_buffer import UpsertBuffer
from tests.runtime.connectors.kafka.test_sink import (
    ids_batch,
    new_topic,
    open_sink,
    records,
    upsert_table,
)


def changes(*pairs: tuple[bytes, bytes | None]) -> pa.Table:
    return pa.table({"partition": pa.nulls(len(pairs), pa.int32()),
                     "key": pa.array([k for k, _ in pairs], pa.binary()),
                     "value": pa.array([v for _, v in pairs], pa.binary()),
                     "timestamp": pa.nulls(len(pairs), pa.int64()),
                     "headers": pa.nulls(len(pairs), RECORDS.field("headers").type)},
                    schema=RECORDS)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def flushed(written: list[pa.Table]) -> list[list[tuple[bytes, bytes | None]]]:
    return [list(zip(t.column("key").to_pylist(), t.column("value").to_pylist()))
            for t in written]


def test_a_full_buffer_writes_the_last_change_of_every_key() -> None:
    written: list[pa.Table] = []
    buffer = UpsertBuffer(4, 60_000, written.append, Clock())
    buffer.add(changes((b"a", b"1"), (b"b", b"1"), (b"a", b"2")))
    assert written == []
    buffer.add(changes((b"b", None), (b"c", b"1")))
    assert flushed(written) == [[(b"a", b"2"), (b"b", None), (b"c", b"1")]]
    buffer.flush()  # empty: writes nothing
    assert len(written) == 1


def test_the_interval_flushes_when_the_next_change_arrives() -> None:
    written: list[pa.Table] = []
    clock = Clock()
    buffer = UpsertBuffer(1000, 500, written.append, clock)
    buffer.add(changes((b"a", b"1")))
    clock.now = 0.4
    buffer.add(changes((b"a", b"2")))
    assert written == []
    clock.now = 0.5
    buffer.add(changes((b"b", b"1")))
    assert flushed(written) == [[(b"a", b"2"), (b"b", b"1")]]
    clock.now = 0.9   # the interval counts from the oldest change after the flush
    buffer.add(changes((b"c", b"1")))
    assert len(written) == 1
    buffer.flush()
    assert flushed(written)[1] == [(b"c", b"1")]


def test_buffered_upsert_sink_writes_at_the_snapshot(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = upsert_table(kafka_broker, topic, **{"sink.buffer-flush.max-rows": "100",
                                                 "sink.buffer-flush.interval": "1 h"})
    sink = open_sink(table)
    kinds = np.array([INSERT, INSERT, UPDATE_BEFORE, UPDATE_AFTER, INSERT, DELETE],
                     dtype=np.int8)
    sink.write(ids_batch([1, 2, 1, 1, 3, 2], ["a", "b", "a", "c", "x", "b"]), kinds)
    assert records(kafka_broker, topic) == []
    sink.snapshot_state(1)
    assert records(kafka_broker, topic) == [
        (0, b'{"id":1}', b'{"id":1,"name":"c"}'),
        (0, b'{"id":3}', b'{"id":3,"name":"x"}'),
        (0, b'{"id":2}', None)]
    sink.write(ids_batch([3]), np.array([DELETE], dtype=np.int8))
    sink.finish()
    sink.close()
    assert records(kafka_broker, topic)[-1] == (0, b'{"id":3}', None)


def test_buffer_options_are_set_together(kafka_broker: Any) -> None:
    table = upsert_table(kafka_broker, "unused", **{"sink.buffer-flush.max-rows": "10"})
    with pytest.raises(CatalogError, match="'sink.buffer-flush.max-rows' and "
                                           "'sink.buffer-flush.interval' must both"):
        open_sink(table)
