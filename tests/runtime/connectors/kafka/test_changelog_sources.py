"""Changelog sources on the real broker: an upsert-kafka table read back as a changelog
(the last value per key wins, a tombstone deletes) and debezium-json change events, with
the rows and row kinds checked by hand."""

from __future__ import annotations

from itertools import count
from typing import Any

import pytest

import flowsql
from flowsql.errors import PlanError
from tests.harness.kafka_broker import DevBroker

_names = count()


def _stream(session: Any, query: str) -> list[tuple[Any, ...]]:
    """Every change of ``query`` as (kind, columns...)."""
    rows: list[tuple[Any, ...]] = []
    for batch in session.sql(query).stream():
        rows += zip(*(column.to_pylist() for column in batch.columns))
    return rows


def _upsert_topic(broker: DevBroker) -> str:
    name = f"upsert{next(_names)}"
    broker.create_topic(name, 2)
    # keys a and b in partition 0, c in partition 1; the key's partition is fixed, as a
    # producer partitioning by key makes it
    broker.produce(name, [
        {"key": {"k": "a"}, "value": {"k": "a", "n": 1}, "partition": 0},
        {"key": {"k": "b"}, "value": {"k": "b", "n": 10}, "partition": 0},
        {"key": {"k": "c"}, "value": {"k": "c", "n": 100}, "partition": 1},
        {"key": {"k": "a"}, "value": {"k": "a", "n": 2}, "partition": 0},
        {"key": {"k": "b"}, "value": None, "partition": 0},
        {"key": {"k": "c"}, "value": {"k": "c", "n": 100}, "partition": 1},
        {"key": {"k": "x"}, "value": None, "partition": 1},
    ])
    return name


def _upsert_table(session: Any, broker: DevBroker, topic: str) -> None:
    session.sql(f"""CREATE TABLE counts (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED)
        WITH ('connector' = 'upsert-kafka', 'topic' = '{topic}',
        'properties.bootstrap.servers' = '{broker.bootstrap}',
        'key.format' = 'json', 'value.format' = 'json')""")


def test_upsert_kafka_reads_a_changelog(kafka_broker: DevBroker) -> None:
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    _upsert_table(session, kafka_broker, _upsert_topic(kafka_broker))
    result = session.sql("SELECT k, n FROM counts")
    changes: list[tuple[Any, ...]] = []
    for batch in result.stream():
        changes += zip(*(column.to_pylist() for column in batch.columns))
        if len(changes) >= 6:
            break
    by_key: dict[str, list[tuple[Any, ...]]] = {}
    for kind, k, n in changes:
        by_key.setdefault(k, []).append((kind, n))
    # the order within a partition is kept; partitions interleave freely
    assert by_key == {"a": [("+I", 1), ("-U", 1), ("+U", 2)], "b": [("+I", 10), ("-D", 10)],
                      "c": [("+I", 100)]}


def test_an_aggregate_over_an_upsert_table(kafka_broker: DevBroker) -> None:
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    _upsert_table(session, kafka_broker, _upsert_topic(kafka_broker))
    stream = session.sql("SELECT COUNT(*) AS c, SUM(n) AS s FROM counts").stream()
    latest = None
    for batch in stream:
        for kind, c, s in zip(*(column.to_pylist() for column in batch.columns)):
            if kind in ("+I", "+U"):
                latest = (c, s)
        if latest == (2, 102):
            break
    stream.close()
    assert latest == (2, 102)  # a=2 and c=100 remain


def test_a_changelog_source_is_refused_in_batch_mode(kafka_broker: DevBroker) -> None:
    session = flowsql.connect(**{"execution.runtime-mode": "batch"})
    _upsert_table(session, kafka_broker, "anything")
    with pytest.raises(PlanError, match="table 'counts' is a changelog source .* streaming "
                                        "mode only"):
        session.sql("SELECT * FROM counts")


def test_debezium_json_changes(kafka_broker: DevBroker) -> None:
    name = f"cdc{next(_names)}"
    kafka_broker.create_topic(name, 1)
    kafka_broker.produce(name, [
        {"value": {"before": None, "after": {"id": 1, "name": "ann"}, "op": "r"}},
        {"value": {"before": None, "after": {"id": 2, "name": "bob"}, "op": "c"}},
        {"value": {"before": {"id": 1, "name": "ann"}, "after": {"id": 1, "name": "amy"},
                   "op": "u"}},
        {"value": {"before": {"id": 2, "name": "bob"}, "after": None, "op": "d"}},
        {"value": None},  # the tombstone Debezium writes after a delete
    ])
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    session.sql(f"""CREATE TABLE people (id BIGINT, name STRING) WITH (
        'connector' = 'kafka', 'topic' = '{name}', 'format' = 'debezium-json',
        'properties.bootstrap.servers' = '{kafka_broker.bootstrap}',
        'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset')""")
    assert _stream(session, "SELECT id, name FROM people") == [
        ("+I", 1, "ann"), ("+I", 2, "bob"), ("-U", 1, "ann"), ("+U", 1, "amy"),
        ("-D", 2, "bob")]
    final = session.sql("SELECT id, name FROM people").to_arrow().to_pylist()
    assert final == [{"id": 1, "name": "amy"}]
