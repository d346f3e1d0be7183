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
        (b'{"id":1}', {"id": 1, "name": "A"}, 1_704_067_200_000),
        (b'{"id":2}', {"id": 2, "name": "B"}, 1_704_067_200_000),
        (b'{"id":3}', {"id": 3, "name": "C"}, 1_704_067_200_000)]
    assert sorted(m.partition() for m in read) == [0, 0, 1]


def test_a_checkpointed_streaming_insert_commits_every_row_once(kafka_broker: Any,
                                                               tmp_path: Any) -> None:
    """Checkpoints complete while the job runs (each commits its transaction per sink
    subtask), and the final checkpoint commits the rest."""
    topic = new_topic(kafka_broker, partitions=3)
    session = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                 "parallelism.default": "2",
                                 "execution.checkpointing.interval": "200 ms",
                                 "execution.checkpointing.dir": str(tmp_path)})
    try:
        session.sql("""CREATE TABLE src (v BIGINT) WITH ('connector' = 'datagen',
                         'rows-per-second' = '400', 'fields.v.kind' = 'sequence',
                         'fields.v.start' = '1', 'fields.v.end' = '2000')""")
        session.sql(f"""
            CREATE TABLE k (v BIGINT)
            WITH ('connector' = 'kafka', 'topic' = '{topic}',
                  'properties.bootstrap.servers' = '{kafka_broker.bootstrap}',
                  'format' = 'json', 'sink.delivery-guarantee' = 'exactly-once',
                  'sink.transactional-id-prefix' = 'stream-{uuid.uuid4().hex[:8]}')""")
        job = session.sql("INSERT INTO k SELECT v FROM src").job
        while_running = 0
        while not while_running and job.status() == "RUNNING":
            while_running = len(kafka_broker.read_all(topic, isolation="read_uncommitted"))
        assert job.wait(120) == "FINISHED"
        summary = job.checkpoint_summary()
    finally:
        session.close()
    values = [json.loads(m.value())["v"]
              for m in kafka_broker.read_all(topic, isolation="read_uncommitted")]
    assert sorted(values) == list(range(1, 2001))
    # checkpoints during the run made rows visible before the end
    assert 0 < while_running < 2000
    assert summary is not None and summary["checkpoints_completed"] >= 2


def test_virtual_metadata_is_read_not_written(kafka_broker: Any) -> None:
    """A VIRTUAL metadata column is not a target of INSERT INTO and is filled when reading;
    a writable one (headers) left out of the INSERT is written as no headers."""
    topic = new_topic(kafka_broker, partitions=1)
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    try:
        session.sql(f"""
            CREATE TABLE k (id INT, hs MAP<STRING, BYTES> METADATA FROM 'headers',
                            `offset` BIGINT METADATA VIRTUAL)
            WITH ('connector' = 'kafka', 'topic' = '{topic}', 'format' = 'json',
                  'properties.bootstrap.servers' = '{kafka_broker.bootstrap}',
                  'scan.startup.mode' = 'earliest-offset',
                  'scan.bounded.mode' = 'latest-offset')""")
        written = session.sql("INSERT INTO k (id) SELECT * FROM (VALUES (7), (8)) AS t(id)")
        assert written.job.wait(60) == "FINISHED"
        rows = session.sql("SELECT id, hs, `offset` FROM k").to_arrow().to_pylist()
    finally:
        session.close()
    assert rows == [{"id": 7, "hs": [], "offset": 0}, {"id": 8, "hs": [], "offset": 1}]
