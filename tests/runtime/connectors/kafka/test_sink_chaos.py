"""Exactly-once into Kafka through failures of the real runtime: worker processes killed
(-9) while a checkpointed INSERT runs (the job restarts from its latest checkpoint, the
sinks restore their pending records), and the whole session killed, then the INSERT
started again by a new session from the last checkpoint (a new job whose checkpoint ids
start again at 1). The topic must end with every row exactly once.

A kill that lands inside a sink's commit (between its produce and commit_transaction)
leaves a transaction the test broker does not resolve, which Kafka would abort and hide;
such a run is checked for lost and foreign records and repeated with other kill times
(``tests/harness/exactly_once.py``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import flowsql
from tests.harness.chaos import Killer, chaos_session, create_sources, latest_checkpoint
from tests.harness.exactly_once import ATTEMPTS, exactly_once
from tests.runtime.connectors.kafka.test_sink import new_topic

ROWS = 20_000


def kafka_ddl(broker: Any, topic: str, guarantee: str = "exactly-once") -> str:
    return (f"CREATE TABLE k (v BIGINT) WITH ('connector' = 'kafka', 'topic' = '{topic}', "
            f"'properties.bootstrap.servers' = '{broker.bootstrap}', 'format' = 'json', "
            f"'sink.delivery-guarantee' = '{guarantee}', "
            f"'sink.transactional-id-prefix' = 'chaos-{uuid.uuid4().hex[:8]}')")


def values_in(broker: Any, topic: str, isolation: str = "read_uncommitted") -> Counter[int]:
    return Counter(json.loads(m.value())["v"]
                   for m in broker.read_all(topic, isolation=isolation))


def exactly_once_in(broker: Any, topic: str, expected: Counter[int]) -> bool:
    """``exactly_once`` of the topic's committed and whole contents."""
    return exactly_once(expected, values_in(broker, topic, "read_committed"),
                        values_in(broker, topic))


@pytest.mark.parametrize("seed", [1, 2])
def test_killed_workers_leave_every_row_once(kafka_broker: Any, tmp_path: Path,
                                             seed: int) -> None:
    for attempt in range(ATTEMPTS):
        topic = new_topic(kafka_broker, partitions=3)
        session = chaos_session(tmp_path / f"checkpoints{attempt}")
        try:
            create_sources(session, rows=ROWS, rate=5000)
            session.sql(kafka_ddl(kafka_broker, topic))
            job = session.sql("INSERT INTO k SELECT v FROM src").job
            shift = 0.13 * attempt  # another attempt kills at other moments
            killer = Killer(session, [1.0 + shift, 2.2 + shift], seed).start()
            try:
                status = job.wait(120)
            finally:
                killer.stop()
            restarts = job.checkpoint_summary()["restarts"]
        finally:
            session.close()
        assert status == "FINISHED" and killer.killed and restarts >= 1
        if exactly_once_in(kafka_broker, topic, Counter(range(1, ROWS + 1))):
            return
    raise AssertionError(f"every one of {ATTEMPTS} runs had a kill inside a sink's commit")


def test_at_least_once_loses_no_row_when_workers_are_killed(kafka_broker: Any,
                                                            tmp_path: Path) -> None:
    topic = new_topic(kafka_broker, partitions=3)
    session = chaos_session(tmp_path / "checkpoints")
    try:
        create_sources(session, rows=ROWS, rate=5000)
        session.sql(kafka_ddl(kafka_broker, topic, "at-least-once"))
        job = session.sql("INSERT INTO k SELECT v FROM src").job
        killer = Killer(session, [1.0, 2.2], 3).start()
        try:
            status = job.wait(120)
        finally:
            killer.stop()
    finally:
        session.close()
    assert status == "FINISHED" and killer.killed
    assert set(values_in(kafka_broker, topic)) == set(range(1, ROWS + 1))


def test_a_new_session_continues_from_the_last_checkpoint(kafka_broker: Any,
                                                          tmp_path: Path) -> None:
    for attempt in range(ATTEMPTS):
        topic = _killed_session_continued(kafka_broker, tmp_path / f"run{attempt}")
        if exactly_once_in(kafka_broker, topic, Counter(range(1, ROWS + 1))):
            return
    raise AssertionError(f"every one of {ATTEMPTS} runs had a kill inside a sink's commit")


def _killed_session_continued(kafka_broker: Any, tmp_path: Path) -> str:
    """A session running the INSERT is killed; a new one continues from its last
    checkpoint to the end. The topic written."""
    topic = new_topic(kafka_broker, partitions=2)
    checkpoints = tmp_path / "checkpoints"
    statements = [
        "SET 'execution.runtime-mode' = 'streaming'",
        "SET 'parallelism.default' = '2'",
        "SET 'execution.checkpointing.interval' = '200 ms'",
        f"SET 'execution.checkpointing.dir' = '{checkpoints}'",
        "SET 'execution.checkpointing.num-retained' = '3'",
        "CREATE TABLE src (v BIGINT) WITH ('connector' = 'datagen', "
        "'rows-per-second' = '4000', 'fields.v.kind' = 'sequence', 'fields.v.start' = '1', "
        f"'fields.v.end' = '{ROWS}')",
        kafka_ddl(kafka_broker, topic),
    ]
    script = ("import flowsql\n"
              "session = flowsql.connect()\n"
              f"for statement in {statements!r}:\n"
              "    session.sql(statement)\n"
              "session.sql('INSERT INTO k SELECT v FROM src').job.wait()\n")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not values_in(kafka_broker, topic) or latest_checkpoint(checkpoints) is None:
            assert process.poll() is None, "the first session ended before the kill"
            assert time.monotonic() < deadline, "no checkpoint completed"
            time.sleep(0.1)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
    time.sleep(0.5)  # its workers notice the closed control connection and exit
    checkpoint = latest_checkpoint(checkpoints)
    assert checkpoint is not None
    assert 0 < sum(values_in(kafka_broker, topic).values()) < ROWS, \
        "the kill did not land inside the job"

    session = flowsql.connect()
    try:
        for statement in statements:
            session.sql(statement)
        session.sql(f"SET 'execution.savepoint.path' = '{checkpoint}'")
        assert session.sql("INSERT INTO k SELECT v FROM src").job.wait(120) == "FINISHED"
    finally:
        session.close()
    return topic
