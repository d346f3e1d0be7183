"""INSERT INTO a kafka table from SQL, end to end on the broker: the DDL, the planned job,
the sink operator and the records it leaves in the topic."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

import flowsql
from tests.runtime.connectors.kafka.test_sink import new_topic


@pytest.mark.parametrize(("mode", "guarantee"), [("batch", "at-least-once"),
                                                 ("streaming", "exactly-once")])
def test_insert_into_a_kafka_table(kafka_broker: Any, mode: str, guarantee: str) -> None:
    topic = new_topic(kafka_broker, partitions=2)
    session = flowsql.connect(**{"execution.runtime-mode": mode,
                                 "execution.checkpointing.interval": "1 s"})
    try:
        session.sql(f"""
            CREATE TABLE k (id INT, name STRING,
                            ts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp')
            WITH ('connector' = 'kafka', 'topic' = '{topic}',
                  'properties.bootstrap.servers' = '{kafka_broker.bootstrap}',
                  'key.format' = 'json', 'key.fields' = 'id', 'format' = 'json',
                  'sink.partitioner' = 'round-robin',
                  'sink.delivery-guarantee' = '{guarantee}',
                  'sink.transactional-id-prefix' = 'sql-{uuid.uuid4().hex[:8]}')""")
        result = session.sql("""
            INSERT INTO k
            SELECT id, UPPER(name), CAST(TIMESTAMP '2024-01-01 00:00:00' AS TIMESTAMP_LTZ(3))
            FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c')) AS t(id, name)""")
        assert result.kind == "job" and result.job.wait(60) == "FINISHED"
    finally:
        session.close()
    read = kafka_broker.read_all(topic, isolation="read_uncommitted")
    assert sorted((m.key(), json.loads(m.value()), m.timestamp()[1]) for m in read) == [
        (b'{"id": 1}', {"id": 1, "name": "A"}, 1_704_067_200_000),
        (b'{"id": 2}', {"id": 2, "name": "B"}, 1_704_067_200_000),
        (b'{"id": 3}', {"id": 3, "name": "C"}, 1_704_067_200_000)]
    assert sorted(m.partition() for m in read) == [0, 0, 1]
