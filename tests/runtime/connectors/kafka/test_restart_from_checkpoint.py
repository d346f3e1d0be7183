"""A continuous Kafka INSERT stopped by cancel (a final checkpoint the sink commits) and
started again from its retained checkpoint (``execution.savepoint.path``): the restarted job
reads exactly the records the first one had not, so the table holds every record once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import flowsql
from tests.harness.chaos import committed_rows, latest_checkpoint
from tests.harness.kafka_broker import DevBroker


def _statements(broker: DevBroker, out: Path, bounded: bool) -> list[str]:
    end = ", 'scan.bounded.mode' = 'latest-offset'" if bounded else ""
    return [f"""CREATE TABLE src (v BIGINT) WITH ('connector' = 'kafka', 'topic' = 'restart',
                'format' = 'json', 'properties.bootstrap.servers' = '{broker.bootstrap}',
                'properties.group.id' = 'restart-job',
                'scan.startup.mode' = 'earliest-offset'{end})""",
            f"CREATE TABLE out_t (v BIGINT) WITH ('connector' = 'filesystem', "
            f"'path' = '{out}', 'format' = 'parquet')"]


def _group_offsets(broker: DevBroker) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "restart-job"})
    try:
        found = consumer.committed([TopicPartition("restart", p) for p in (0, 1)], timeout=5)
        return [tp.offset for tp in found]
    finally:
        consumer.close()


def test_restart_from_the_retained_checkpoint(kafka_broker: DevBroker, tmp_path: Path) -> None:
    kafka_broker.create_topic("restart", 2)
    kafka_broker.produce("restart", [{"value": {"v": i}, "partition": i % 2}
                                     for i in range(100)])
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    settings = {"execution.runtime-mode": "streaming", "parallelism.default": "2",
                "execution.checkpointing.interval": "300 ms",
                "execution.checkpointing.dir": str(checkpoints)}
    session: Any = flowsql.connect(**settings)
    try:
        for statement in _statements(kafka_broker, out, bounded=False):
            session.sql(statement)
        job = session.sql("INSERT INTO out_t SELECT v FROM src").job
        deadline = time.monotonic() + 60
        while sum(committed_rows(out).values()) < 100:
            assert time.monotonic() < deadline, "the first job committed too little"
            time.sleep(0.1)
        # completed checkpoints commit their offsets to the group (for monitoring)
        while _group_offsets(kafka_broker) != [50, 50]:
            assert time.monotonic() < deadline, "the group's offsets never reached the end"
            time.sleep(0.1)
        job.cancel()
        job.wait(30)
    finally:
        session.close()
    assert sorted(v for (v,) in committed_rows(out).elements()) == list(range(100))

    kafka_broker.produce("restart", [{"value": {"v": i}, "partition": i % 2}
                                     for i in range(100, 150)])
    session = flowsql.connect(**settings)
    try:
        for statement in _statements(kafka_broker, out, bounded=True):
            session.sql(statement)
        session.sql(f"SET 'execution.savepoint.path' = '{latest_checkpoint(checkpoints)}'")
        job = session.sql("INSERT INTO out_t SELECT v FROM src").job
        assert job.wait(60) == "FINISHED"
    finally:
        session.close()
    assert sorted(v for (v,) in committed_rows(out).elements()) == list(range(150))
