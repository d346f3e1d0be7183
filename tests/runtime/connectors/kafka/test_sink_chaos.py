"""Exactly-once into Kafka through failures of the real runtime: worker processes killed
(-9) while a checkpointed INSERT runs (the job restarts from its latest checkpoint, the
sinks restore their pending records), and the whole session killed, then the INSERT
started again by a new session from the last checkpoint (a new job whose checkpoint ids
start again at 1). The topic must end with every row exactly once.

The test broker shows the records of aborted transactions to every reader, so a kill
that lands inside a sink's commit (between its produce and commit_transaction) would
show up here as duplicates although Kafka would hide them; the sink's transactions are
short next to the checkpoint interval, and these seeds do not hit that window."""

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
from flowsql.runtime.checkpoint import paths
from tests.harness.chaos import Killer, chaos_session, create_sources
from tests.runtime.connectors.kafka.test_sink import new_topic

ROWS = 20_000


def kafka_ddl(broker: Any, topic: str, guarantee: str = "exactly-once") -> str:
    return (f"CREATE TABLE k (v BIGINT) WITH ('connector' = 'kafka', 'topic' = '{topic}', "
            f"'properties.bootstrap.servers' = '{broker.bootstrap}', 'format' = 'json', "
            f"'sink.delivery-guarantee' = '{guarantee}', "
            f"'sink.transactional-id-prefix' = 'chaos-{uuid.uuid4().hex[:8]}')")


def latest_checkpoint(checkpoints: Path) -> Path | None:
    """The completed checkpoint (``chk-<n>`` with its ``_metadata``) of highest id."""
    completed = [(paths.checkpoint_id_of(c.name), c) for job in checkpoints.glob("*")
                 for c in job.glob("chk-*") if (c / "_metadata").exists()]
    numbered = [(n, c) for n, c in completed if n is not None]
    return max(numbered, key=lambda item: item[0])[1] if numbered else None


def values_in(broker: Any, topic: str) -> Counter[int]:
    return Counter(json.loads(m.value())["v"]
                   for m in broker.read_all(topic, isolation="read_uncommitted"))


@pytest.mark.parametrize("seed", [1, 2])
def test_killed_workers_leave_every_row_once(kafka_broker: Any, tmp_path: Path,
                                             seed: int) -> None:
    topic = new_topic(kafka_broker, partitions=3)
    session = chaos_session(tmp_path / "checkpoints")
    try:
        create_sources(session, rows=ROWS, rate=5000)
        session.sql(kafka_ddl(kafka_broker, topic))
        job = session.sql("INSERT INTO k SELECT v FROM src").job
        killer = Killer(session, [1.0, 2.2], seed).start()
        try:
            status = job.wait(120)
        finally:
            killer.stop()
        restarts = job.checkpoint_summary()["restarts"]
    finally:
        session.close()
    assert status == "FINISHED" and killer.killed and restarts >= 1
    assert values_in(kafka_broker, topic) == Counter(range(1, ROWS + 1))


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
    assert values_in(kafka_broker, topic) == Counter(range(1, ROWS + 1))
