"""The kafka and upsert-kafka sinks against a real broker: records (keys, values, headers,
timestamps), partitioners, row kinds, at-least-once flushing and errors.

Each test drives ``KafkaSink`` directly, as the sink operator does, and reads the topic
back with a plain consumer; every expectation is written out by hand. Exactly-once is in
``test_sink_exactly_once.py``."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import CatalogError, ExecutionError
from flowsql.planner.catalog import MetadataColumn, TableEntry
from flowsql.runtime.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from flowsql.runtime.connectors.kafka.sink import KafkaSink
from flowsql.runtime.operator import OperatorContext

CHECKPOINTING = {"execution.checkpointing.interval": "1 s"}
IDS = pa.schema([("id", pa.int32()), ("name", pa.string())])
HEADERS = pa.map_(pa.string(), pa.binary())
WITH_METADATA = pa.schema([("id", pa.int32()), ("name", pa.string()),
                           ("ts", pa.timestamp("ms", "UTC")), ("h", HEADERS)])


def new_topic(broker: Any, partitions: int = 1) -> str:
    name = f"sink-{uuid.uuid4().hex[:10]}"
    broker.create_topic(name, partitions)
    return name


def kafka_table(broker: Any, topic: str, schema: pa.Schema = IDS, connector: str = "kafka",
                metadata: tuple[MetadataColumn, ...] = (), primary_key: tuple[str, ...] = (),
                **options: str) -> TableEntry:
    base = {"connector": connector, "topic": topic,
            "properties.bootstrap.servers": broker.bootstrap}
    if connector == "kafka" and "value.format" not in options:
        base["format"] = "json"
    return TableEntry("k", schema, {**base, **options}, metadata=metadata,
                      primary_key=primary_key)


def open_sink(table: TableEntry, subtask: int = 0, parallelism: int = 1,
              settings: dict[str, str] | None = None, attempt: int = 0,
              checkpointing: bool = True) -> KafkaSink:
    context = OperatorContext("sink", dict(CHECKPOINTING if settings is None else settings),
                              subtask_index=subtask, parallelism=parallelism,
                              job_id="job-a", attempt=attempt, checkpointing=checkpointing)
    return KafkaSink(table, context)


def ids_batch(ids: list[int], names: list[str | None] | None = None) -> pa.RecordBatch:
    names = names if names is not None else [f"n{i}" for i in ids]
    return pa.record_batch([pa.array(ids, pa.int32()), pa.array(names, pa.string())],
                           schema=IDS)


def murmur2_partition(key: bytes, partitions: int) -> int:
    """Where the Java client's default partitioner puts ``key``: ``toPositive(murmur2(key))
    % partitions`` (Kafka's ``Utils.murmur2``, written out from its definition)."""
    m, h = 0x5BD1E995, (0x9747B28C ^ len(key)) & 0xFFFFFFFF
    whole = len(key) & ~3
    for i in range(0, whole, 4):
        k = (int.from_bytes(key[i:i + 4], "little") * m) & 0xFFFFFFFF
        k = ((k ^ (k >> 24)) * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = len(key) % 4
    if rest == 3:
        h ^= key[whole + 2] << 16
    if rest >= 2:
        h ^= key[whole + 1] << 8
    if rest >= 1:
        h = ((h ^ key[whole]) * m) & 0xFFFFFFFF
    h = ((h ^ (h >> 13)) * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions


def records(broker: Any, topic: str, **kwargs: Any) -> list[tuple[Any, ...]]:
    """(partition, key, value) of every record, partition by partition in offset order."""
    return [(m.partition(), m.key(), m.value()) for m in broker.read_all(topic, **kwargs)]


def test_records_carry_key_value_timestamp_and_headers(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = kafka_table(kafka_broker, topic, WITH_METADATA,
                        metadata=(MetadataColumn("ts", "timestamp", False),
                                  MetadataColumn("h", "headers", False)),
                        **{"key.format": "json", "key.fields": "id"})
    batch = pa.record_batch([
        pa.array([1, 2, 3], pa.int32()), pa.array(["a", None, "c"]),
        pa.array([1_700_000_000_123, None, 5], pa.timestamp("ms", "UTC")),
        pa.array([[("trace", b"t1"), ("trace", b"t2")], None, [("n", None)]], HEADERS)],
        schema=WITH_METADATA)
    before = int(time.time() * 1000)
    sink = open_sink(table)
    sink.write(batch, None)
    sink.finish()
    sink.close()
    read = kafka_broker.read_all(topic)
    assert [(m.key(), json.loads(m.value())) for m in read] == [
        (b'{"id":1}', {"id": 1, "name": "a"}), (b'{"id":2}', {"id": 2, "name": None}),
        (b'{"id":3}', {"id": 3, "name": "c"})]
    assert read[0].timestamp()[1] == 1_700_000_000_123 and read[2].timestamp()[1] == 5
    assert before - 1000 <= read[1].timestamp()[1] <= int(time.time() * 1000) + 1000
    assert [m.headers() for m in read] == [[("trace", b"t1"), ("trace", b"t2")], None,
                                           [("n", None)]]


def test_value_without_key_columns_and_a_raw_value(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = kafka_table(kafka_broker, topic, **{
        "key.format": "raw", "key.fields": "name", "value.format": "json",
        "value.fields-include": "EXCEPT_KEY"})
    sink = open_sink(table)
    sink.write(ids_batch([7, 8], ["x", "y"]), None)
    sink.finish()
    sink.close()
    assert records(kafka_broker, topic) == [(0, b"x", b'{"id":7}'), (0, b"y", b'{"id":8}')]


def test_default_partitioner_hashes_keys_as_the_java_client(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker, partitions=4)
    table = kafka_table(kafka_broker, topic, **{"key.format": "raw", "key.fields": "name"})
    names = [f"key-{i}" for i in range(40)]
    sink = open_sink(table)
    sink.write(ids_batch(list(range(40)), names), None)
    sink.finish()
    sink.close()
    found = {key: partition for partition, key, _ in records(kafka_broker, topic)}
    expected = {name.encode(): murmur2_partition(name.encode(), 4) for name in names}
    assert found == expected
    assert len(set(expected.values())) == 4  # the keys do spread over every partition


def test_fixed_partitioner_writes_subtask_mod_partitions(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker, partitions=2)
    table = kafka_table(kafka_broker, topic, **{"sink.partitioner": "fixed"})
    for subtask, ids in ((0, [1, 2]), (1, [3]), (3, [4, 5])):
        sink = open_sink(table, subtask=subtask, parallelism=4)
        sink.write(ids_batch(ids), None)
        sink.finish()
        sink.close()
    assert [(p, json.loads(v)["id"]) for p, _, v in records(kafka_broker, topic)] == [
        (0, 1), (0, 2), (1, 3), (1, 4), (1, 5)]


def test_round_robin_partitioner_continues_across_batches(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker, partitions=3)
    table = kafka_table(kafka_broker, topic, **{"sink.partitioner": "round-robin"})
    sink = open_sink(table)
    sink.write(ids_batch([1, 2]), None)
    sink.write(ids_batch([3, 4, 5, 6]), None)
    sink.finish()
    sink.close()
    assert [(p, json.loads(v)["id"]) for p, _, v in records(kafka_broker, topic)] == [
        (0, 1), (0, 4), (1, 2), (1, 5), (2, 3), (2, 6)]


def upsert_table(broker: Any, topic: str, **options: str) -> TableEntry:
    return kafka_table(broker, topic, connector="upsert-kafka", primary_key=("id",),
                       **{"key.format": "json", "value.format": "json", **options})


def test_upsert_writes_values_and_tombstones_and_drops_update_before(kafka_broker: Any
                                                                      ) -> None:
    topic = new_topic(kafka_broker)
    sink = open_sink(upsert_table(kafka_broker, topic))
    kinds = np.array([INSERT, INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE], dtype=np.int8)
    sink.write(ids_batch([1, 2, 1, 1, 2], ["a", "b", "a", "c", "b"]), kinds)
    sink.write(ids_batch([3]), None)  # an insert-only batch of an upsert table
    sink.snapshot_state(1)
    assert records(kafka_broker, topic) == [
        (0, b'{"id":1}', b'{"id":1,"name":"a"}'),
        (0, b'{"id":2}', b'{"id":2,"name":"b"}'),
        (0, b'{"id":1}', b'{"id":1,"name":"c"}'),
        (0, b'{"id":2}', None),
        (0, b'{"id":3}', b'{"id":3,"name":"n3"}')]
    sink.close()


def test_upsert_key_must_not_be_null(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    sink = open_sink(upsert_table(kafka_broker, topic))
    batch = pa.record_batch([pa.array([1, None], pa.int32()), pa.array(["a", "b"])],
                            schema=IDS)
    with pytest.raises(ExecutionError, match="upsert-kafka table 'k': key column 'id' is NULL"):
        sink.write(batch, np.array([INSERT, INSERT], dtype=np.int8))
    sink.close()


def test_kafka_table_rejects_retractions(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    sink = open_sink(kafka_table(kafka_broker, topic))
    sink.write(ids_batch([1]), np.array([INSERT], dtype=np.int8))
    with pytest.raises(ExecutionError, match="kafka table 'k' is append-only and cannot "
                                             "write -U rows"):
        sink.write(ids_batch([1, 1]), np.array([INSERT, UPDATE_BEFORE], dtype=np.int8))
    sink.close()


def test_at_least_once_snapshot_waits_until_every_record_is_in_the_topic(
        kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker, partitions=2)
    table = kafka_table(kafka_broker, topic, **{"properties.linger.ms": "5000",
                                                "sink.partitioner": "round-robin"})
    sink = open_sink(table)
    sink.write(ids_batch(list(range(100))), None)
    assert sink.snapshot_state(1) == {}
    # read without the sink's finish or close: the snapshot alone must have delivered them
    ids = sorted(json.loads(v)["id"] for _, _, v in records(kafka_broker, topic))
    assert ids == list(range(100))
    sink.close()


def test_a_full_client_queue_waits_for_room(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = kafka_table(kafka_broker, topic,
                        **{"properties.queue.buffering.max.messages": "10"})
    sink = open_sink(table)
    sink.write(ids_batch(list(range(500))), None)
    sink.snapshot_state(1)
    sink.close()
    assert [json.loads(v)["id"] for _, _, v in records(kafka_broker, topic)] == list(range(500))


def test_none_guarantee_writes_at_the_end_of_the_input(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = kafka_table(kafka_broker, topic, **{"sink.delivery-guarantee": "none"})
    sink = open_sink(table, settings={})
    sink.write(ids_batch([1, 2]), None)
    assert sink.snapshot_state(1) == {}
    sink.finish()
    sink.close()
    assert [json.loads(v)["id"] for _, _, v in records(kafka_broker, topic)] == [1, 2]


def test_a_record_over_the_size_limit_names_the_topic(kafka_broker: Any) -> None:
    topic = new_topic(kafka_broker)
    table = kafka_table(kafka_broker, topic, **{"properties.message.max.bytes": "10000"})
    sink = open_sink(table)
    with pytest.raises(ExecutionError, match=f"kafka table 'k': writing topic '{topic}'"
                                             ".*[Ss]ize too large"):
        sink.write(ids_batch([1], ["x" * 20_000]), None)
    sink.close()


def test_an_invalid_client_setting_names_the_table(kafka_broker: Any) -> None:
    table = kafka_table(kafka_broker, "unused", **{"properties.batch.num.messages": "many"})
    with pytest.raises(ExecutionError, match="kafka table 'k': writing topic 'unused' "
                                             "failed: .*batch.num.messages"):
        open_sink(table)


def test_a_sink_needs_one_topic(kafka_broker: Any) -> None:
    table = kafka_table(kafka_broker, "unused")
    options = {k: v for k, v in table.options.items() if k != "topic"}
    with pytest.raises(CatalogError, match="kafka table 'k' has no 'topic'"):
        open_sink(TableEntry("k", IDS, {**options, "topic-pattern": "a.*"}))



def test_a_delivery_failure_fails_the_snapshot_naming_topic_and_error() -> None:
    from tests.harness.kafka_broker import DevBroker

    with DevBroker() as broker:
        topic = new_topic(broker)
        table = kafka_table(broker, topic, **{"properties.message.timeout.ms": "1500"})
        sink = open_sink(table)
        broker.stop()
        sink.write(ids_batch([1]), None)
        with pytest.raises(ExecutionError, match=f"kafka table 'k': writing topic '{topic}' "
                                                 "partition 0 failed: .*timed out"):
            sink.snapshot_state(1)
        sink.close()
