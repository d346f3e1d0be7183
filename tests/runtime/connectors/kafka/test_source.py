"""The kafka source through SQL on a real broker: startup and bounded modes, metadata
columns, per-partition watermarks, bad records, topic patterns. Expected rows are
hand-checked from the produced records."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest

import flowsql
from flowsql.errors import FlowSQLError
from tests.harness.kafka_broker import DevBroker

T0 = 1_700_000_000_000  # epoch ms of record 0
_names = count()


@pytest.fixture
def topic(kafka_broker: DevBroker) -> Iterator[str]:
    """A fresh two-partition topic holding records 0..9: id i in partition i % 2, Kafka
    timestamp T0 + i seconds, a header, JSON value {"id", "name", "ts"}."""
    name = f"src{next(_names)}"
    kafka_broker.create_topic(name, 2)
    kafka_broker.produce(name, [
        {"value": {"id": i, "name": f"n{i}", "ts": f"2024-01-01 00:00:{i:02d}"},
         "key": f"k{i}", "partition": i % 2, "timestamp": T0 + i * 1000,
         "headers": [("h", f"v{i}".encode())]} for i in range(10)])
    yield name


def _session(**settings: str) -> Any:
    return flowsql.connect(**{"execution.runtime-mode": "streaming", **settings})


def _table(session: Any, broker: DevBroker, topic: str, extra: str = "",
           columns: str = "id BIGINT, name STRING, ts TIMESTAMP(3)",
           name: str = "src") -> None:
    session.sql(f"""CREATE TABLE {name} ({columns}) WITH (
        'connector' = 'kafka', 'topic' = '{topic}', 'format' = 'json',
        'properties.bootstrap.servers' = '{broker.bootstrap}'{extra})""")


def _ids(session: Any, query: str = "SELECT id FROM src") -> list[int]:
    return sorted(session.sql(query).to_arrow().column(0).to_pylist())


BOUNDED = ", 'scan.bounded.mode' = 'latest-offset'"


def test_earliest_offset_reads_every_record(kafka_broker: DevBroker, topic: str) -> None:
    session = _session()
    _table(session, kafka_broker, topic,
           f", 'scan.startup.mode' = 'earliest-offset'{BOUNDED}")
    table = session.sql("SELECT id, name, ts FROM src").to_arrow().sort_by("id")
    assert table.column("id").to_pylist() == list(range(10))
    assert table.column("name").to_pylist() == [f"n{i}" for i in range(10)]
    assert [str(t) for t in table.column("ts").to_pylist()][:2] == [
        "2024-01-01 00:00:00", "2024-01-01 00:00:01"]


def test_the_same_table_in_batch_mode(kafka_broker: DevBroker, topic: str) -> None:
    session = flowsql.connect(**{"execution.runtime-mode": "batch"})
    _table(session, kafka_broker, topic,
           f", 'scan.startup.mode' = 'earliest-offset'{BOUNDED}")
    rows = session.sql("SELECT id % 2 AS p, COUNT(*) AS c, SUM(id) AS s FROM src GROUP BY id % 2 "
                       "ORDER BY p").to_arrow().to_pylist()
    assert rows == [{"p": 0, "c": 5, "s": 20}, {"p": 1, "c": 5, "s": 25}]


def test_specific_offsets(kafka_broker: DevBroker, topic: str) -> None:
    # partition 0 holds ids 0,2,4,6,8 at offsets 0..4; partition 1 ids 1,3,5,7,9
    session = _session()
    _table(session, kafka_broker, topic,
           ", 'scan.startup.mode' = 'specific-offsets', "
           "'scan.startup.specific-offsets' = 'partition:0,offset:3;partition:1,offset:1', "
           "'scan.bounded.mode' = 'specific-offsets', "
           "'scan.bounded.specific-offsets' = 'partition:0,offset:5;partition:1,offset:3'")
    assert _ids(session) == [3, 5, 6, 8]


def test_timestamp_start_and_end(kafka_broker: DevBroker, topic: str) -> None:
    session = _session()
    _table(session, kafka_broker, topic,
           f", 'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = "
           f"'{T0 + 4000}', 'scan.bounded.mode' = 'timestamp', "
           f"'scan.bounded.timestamp-millis' = '{T0 + 8000}'")
    assert _ids(session) == [4, 5, 6, 7]


def test_group_offsets(kafka_broker: DevBroker, topic: str) -> None:
    from confluent_kafka import Consumer, TopicPartition

    group = f"g-{topic}"
    committer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": group})
    committer.commit(offsets=[TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 4)],
                     asynchronous=False)
    committer.close()
    session = _session()
    _table(session, kafka_broker, topic,
           f", 'properties.group.id' = '{group}', 'scan.startup.mode' = 'group-offsets'"
           f"{BOUNDED}")
    assert _ids(session) == [6, 8, 9]
    # bounded by the group's offsets, from the earliest
    _table(session, kafka_broker, topic,
           f", 'properties.group.id' = '{group}', 'scan.startup.mode' = 'earliest-offset', "
           "'scan.bounded.mode' = 'group-offsets'", name="upto")
    assert _ids(session, "SELECT id FROM upto") == [0, 1, 2, 3, 4, 5, 7]


def test_group_offsets_without_a_commit(kafka_broker: DevBroker, topic: str) -> None:
    session = _session()
    _table(session, kafka_broker, topic,
           f", 'properties.group.id' = 'never-{topic}', 'scan.startup.mode' = "
           f"'group-offsets'{BOUNDED}")
    with pytest.raises(FlowSQLError, match=r"group 'never-src\d+' has no committed offset for "
                                           r"topic 'src\d+' partition \d.*auto\.offset\.reset"):
        session.sql("SELECT id FROM src").to_arrow()
    _table(session, kafka_broker, topic,
           f", 'properties.group.id' = 'never-{topic}', 'properties.auto.offset.reset' = "
           f"'earliest'{BOUNDED}", name="reset")
    assert _ids(session, "SELECT id FROM reset") == list(range(10))


def test_latest_offset_reads_only_new_records(kafka_broker: DevBroker) -> None:
    name = f"latest{next(_names)}"
    kafka_broker.create_topic(name, 1)
    # one record per batch: this broker reports end offsets right only then
    kafka_broker.produce(name, [{"value": {"id": i}} for i in range(3)], flush_each=True)
    session = _session()
    _table(session, kafka_broker, name,
           ", 'scan.startup.mode' = 'latest-offset', 'scan.bounded.mode' = "
           "'specific-offsets', 'scan.bounded.specific-offsets' = 'partition:0,offset:5'",
           columns="id BIGINT")
    result = session.sql("SELECT id FROM src")
    later = threading.Timer(1.5, lambda: kafka_broker.produce(
        name, [{"value": {"id": i}} for i in (10, 11)], flush_each=True))
    later.start()
    try:
        ids = sorted(v for batch in result.stream() for v in batch.column(1).to_pylist())
    finally:
        later.join()
    assert ids == [10, 11]


def test_metadata_columns(kafka_broker: DevBroker, topic: str) -> None:
    session = _session()
    _table(session, kafka_broker, topic,
           f", 'scan.startup.mode' = 'earliest-offset'{BOUNDED}",
           columns="id BIGINT, kts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL, "
                   "`partition` INT METADATA VIRTUAL, `offset` BIGINT METADATA VIRTUAL, "
                   "tp STRING METADATA FROM 'topic' VIRTUAL, "
                   "hs MAP<STRING, BYTES> METADATA FROM 'headers', "
                   "tt STRING METADATA FROM 'timestamp-type' VIRTUAL")
    rows = session.sql("SELECT id, kts, `partition`, `offset`, tp, hs, tt FROM src").to_arrow()
    got = sorted(rows.to_pylist(), key=lambda r: r["id"])
    assert [(r["id"], r["partition"], r["offset"], r["tp"], r["tt"]) for r in got] == [
        (i, i % 2, i // 2, topic, "CreateTime") for i in range(10)]
    assert [int(r["kts"].timestamp() * 1000) for r in got] == [T0 + i * 1000 for i in range(10)]
    assert [r["hs"] for r in got] == [[("h", f"v{i}".encode())] for i in range(10)]


def test_per_partition_watermarks_make_no_record_late(kafka_broker: DevBroker) -> None:
    """Partition 0's records are all produced (and read) before partition 1's: one
    watermark for the source would pass partition 1's times before they are read and drop
    them as late; per-partition watermarks keep every record."""
    name = f"wm{next(_names)}"
    kafka_broker.create_topic(name, 2)
    for partition in (0, 1):
        kafka_broker.produce(name, [
            {"value": {"id": i, "ts": f"2024-01-01 00:00:{i:02d}"}, "partition": partition}
            for i in range(20)])
    session = _session()
    _table(session, kafka_broker, name, f", 'scan.startup.mode' = 'earliest-offset'{BOUNDED}",
           columns="id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts")
    rows = session.sql(
        "SELECT window_start, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), "
        "INTERVAL '10' SECOND)) GROUP BY window_start, window_end").to_arrow().to_pylist()
    assert sorted((str(r["window_start"]), r["c"]) for r in rows) == [
        ("2024-01-01 00:00:00", 20), ("2024-01-01 00:00:10", 20)]


def test_a_bad_record_names_topic_partition_offset(kafka_broker: DevBroker) -> None:
    name = f"bad{next(_names)}"
    kafka_broker.create_topic(name, 1)
    kafka_broker.produce(name, [{"value": {"id": 1}}, {"value": {"id": 2}},
                                {"value": b"{not json"}, {"value": {"id": 4}}])
    session = _session()
    _table(session, kafka_broker, name, f", 'scan.startup.mode' = 'earliest-offset'{BOUNDED}",
           columns="id BIGINT")
    with pytest.raises(FlowSQLError, match=rf"topic '{name}' partition 0 offset 2"):
        session.sql("SELECT id FROM src").to_arrow()
    _table(session, kafka_broker, name, f", 'scan.startup.mode' = 'earliest-offset'{BOUNDED}"
           ", 'json.ignore-parse-errors' = 'true'", columns="id BIGINT", name="tolerant")
    assert _ids(session, "SELECT id FROM tolerant") == [1, 2, 4]


def test_a_new_topic_matching_the_pattern_is_read(kafka_broker: DevBroker) -> None:
    prefix = f"pat{next(_names)}"
    kafka_broker.create_topic(f"{prefix}_a", 1)
    kafka_broker.produce(f"{prefix}_a", [{"value": {"id": 1}}])
    session = _session()
    session.sql(f"""CREATE TABLE src (id BIGINT, tp STRING METADATA FROM 'topic' VIRTUAL)
        WITH ('connector' = 'kafka', 'topic-pattern' = '{prefix}_.*', 'format' = 'json',
        'properties.bootstrap.servers' = '{kafka_broker.bootstrap}',
        'scan.startup.mode' = 'earliest-offset',
        'scan.topic-partition-discovery.interval' = '200 ms')""")
    seen: list[tuple[int, str]] = []

    def later() -> None:
        time.sleep(1.0)
        kafka_broker.create_topic(f"{prefix}_b", 1)
        kafka_broker.produce(f"{prefix}_b", [{"value": {"id": 2}}])

    thread = threading.Thread(target=later)
    thread.start()
    stream = session.sql("SELECT id, tp FROM src").stream()
    deadline = time.monotonic() + 30
    try:
        for batch in stream:
            seen += zip(batch.column(1).to_pylist(), batch.column(2).to_pylist())
            if len(seen) >= 2 or time.monotonic() > deadline:
                break
    finally:
        stream.close()
        thread.join()
        session.close()
    assert sorted(seen) == [(1, f"{prefix}_a"), (2, f"{prefix}_b")]


@pytest.mark.parametrize(("options", "message"), [
    ("'topic' = 'a', 'topic-pattern' = 'b.*'", "set exactly one of 'topic' and 'topic-pattern'"),
    ("'topic' = 'a', 'key.fields' = 'nope', 'key.format' = 'json'",
     "key field 'nope' is not a payload column"),
    ("'topic' = 'a', 'key.format' = 'json'", "'key.format' needs 'key.fields'"),
    ("'topic' = 'a', 'scan.startup.mode' = 'latest'", "invalid value 'latest' for "
                                                      "scan.startup.mode"),
])
def test_bad_tables_fail_their_ddl(options: str, message: str) -> None:
    session = _session()
    with pytest.raises(FlowSQLError, match=message):
        session.sql(f"CREATE TABLE t (id BIGINT) WITH ('connector' = 'kafka', 'format' = "
                    f"'json', 'properties.bootstrap.servers' = 'localhost:1', {options})")


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_parallel_subtasks_share_the_partitions(kafka_broker: DevBroker, mode: str,
                                                partitions: int) -> None:
    """With one partition, the second subtask owns nothing and ends at once."""
    name = f"par{next(_names)}"
    kafka_broker.create_topic(name, partitions)
    kafka_broker.produce(name, [{"value": {"id": i, "k": i % 4}, "partition": i % partitions}
                                for i in range(100)])
    session = flowsql.connect(**{"execution.runtime-mode": mode, "parallelism.default": "2"})
    try:
        _table(session, kafka_broker, name,
               f", 'scan.startup.mode' = 'earliest-offset'{BOUNDED}",
               columns="id BIGINT, k BIGINT")
        rows = session.sql("SELECT k, COUNT(*) AS c, SUM(id) AS s FROM src GROUP BY k"
                           ).to_arrow().to_pylist()
    finally:
        session.close()
    # k = i % 4 over 0..99: 25 ids each, summing to 1200 + 25 k
    assert sorted(rows, key=lambda r: r["k"]) == [
        {"k": k, "c": 25, "s": 1200 + 25 * k} for k in range(4)]


def test_key_fields(kafka_broker: DevBroker) -> None:
    name = f"keys{next(_names)}"
    kafka_broker.create_topic(name, 1)
    kafka_broker.produce(name, [
        {"key": {"region": "eu", "shop": 7}, "value": {"amount": 10}},
        {"key": {"region": "us", "shop": 8}, "value": {"amount": 20}},
        {"key": None, "value": {"amount": 30}},
    ])
    session = _session()
    _table(session, kafka_broker, name,
           f", 'scan.startup.mode' = 'earliest-offset'{BOUNDED}, 'key.format' = 'json', "
           "'key.fields' = 'k_region;k_shop', 'key.fields-prefix' = 'k_', "
           "'value.fields-include' = 'EXCEPT_KEY'",
           columns="k_region STRING, k_shop INT, amount BIGINT")
    rows = session.sql("SELECT k_region, k_shop, amount FROM src").to_arrow().to_pylist()
    assert rows == [{"k_region": "eu", "k_shop": 7, "amount": 10},
                    {"k_region": "us", "k_shop": 8, "amount": 20},
                    {"k_region": None, "k_shop": None, "amount": 30}]


def test_an_idle_partition_does_not_hold_back_windows(kafka_broker: DevBroker) -> None:
    """Only partition 0 gets records; partition 1 stays empty. With an idle timeout the
    empty partition is left out of the watermark, so windows fire while the (unbounded)
    job runs."""
    name = f"idle{next(_names)}"
    kafka_broker.create_topic(name, 2)
    kafka_broker.produce(name, [{"value": {"id": i, "ts": f"2024-01-01 00:00:{i:02d}"},
                                 "partition": 0} for i in range(25)])
    session = _session(**{"table.exec.source.idle-timeout": "300 ms"})
    _table(session, kafka_broker, name, ", 'scan.startup.mode' = 'earliest-offset'",
           columns="id BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts")
    stream = session.sql("SELECT window_start, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE src, "
                         "DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
                         "GROUP BY window_start, window_end").stream()
    fired: list[tuple[str, int]] = []
    try:
        for batch in stream:
            fired += zip(map(str, batch.column(1).to_pylist()), batch.column(2).to_pylist())
            if len(fired) >= 2:
                break
    finally:
        stream.close()
        session.close()
    assert fired == [("2024-01-01 00:00:00", 10), ("2024-01-01 00:00:10", 10)]


def _avro(record: dict[str, Any]) -> bytes:
    """``record`` in Flink's schemaless avro: a record of nullable long and string fields."""
    import io

    import fastavro

    schema = fastavro.parse_schema({"type": "record", "name": "record", "fields": [
        {"name": "id", "type": ["null", "long"]}, {"name": "name", "type": ["null", "string"]}]})
    out = io.BytesIO()
    fastavro.schemaless_writer(out, schema, record)
    return out.getvalue()


@pytest.mark.parametrize(("fmt", "payloads", "columns", "expected"), [
    ("csv", [b"1,ann", b"2,", b"3,\"c, d\""], "id BIGINT, name STRING",
     [(1, "ann"), (2, ""), (3, "c, d")]),
    ("raw", [b"hello", "h\u00e9".encode(), None], "line STRING",
     [("hello",), ("h\u00e9",), (None,)]),
    ("avro", [_avro({"id": 1, "name": "ann"}), _avro({"id": 2, "name": None})],
     "id BIGINT, name STRING", [(1, "ann"), (2, None)]),
])
def test_formats_through_sql(kafka_broker: DevBroker, fmt: str, payloads: list[Any],
                             columns: str, expected: list[tuple[Any, ...]]) -> None:
    name = f"fmt{next(_names)}"
    kafka_broker.create_topic(name, 1)
    kafka_broker.produce(name, [{"value": p} for p in payloads])
    session = _session()
    session.sql(f"""CREATE TABLE src ({columns}) WITH (
        'connector' = 'kafka', 'topic' = '{name}', 'format' = '{fmt}',
        'properties.bootstrap.servers' = '{kafka_broker.bootstrap}',
        'scan.startup.mode' = 'earliest-offset'{BOUNDED})""")
    table = session.sql("SELECT * FROM src").to_arrow()
    assert list(zip(*(c.to_pylist() for c in table.columns))) == expected
