"""kill -9 of a worker while a checkpointed Kafka job runs (parallelism 2, 200 ms
checkpoints): Kafka source -> TUMBLE aggregate -> filesystem sink (exactly-once by two-phase
commit) and -> Kafka sink (exactly-once by transactions); the committed output equals the
failure-free run's exactly.

The source topic has two partitions whose event times rise within each partition; the job
reads to fixed end offsets (``scan.bounded.mode`` = 'specific-offsets') while a producer
writes the events over about two seconds, so the job runs long enough to be killed and ends
by itself. Per-partition watermarks make the windows' contents independent of how the two
partitions interleave, hence deterministic. The files must match exactly every time; the
Kafka topic too, except after a kill inside a sink's commit, which the test broker cannot
resolve (``tests/harness/exactly_once.py``): the run is then repeated with other kill times.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.harness.chaos import Killer, chaos_session, committed_rows
from tests.harness.exactly_once import ATTEMPTS, exactly_once
from tests.harness.kafka_broker import DevBroker

EVENTS = 12_000
PARTITIONS = 2
SELECT = ("SELECT window_start, window_end, k, COUNT(*), SUM(v) FROM TABLE(TUMBLE("
          "TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND)) "
          "GROUP BY window_start, window_end, k")


def _events() -> list[dict[str, Any]]:
    """Event i: key i % 7, event time 5 ms apart, in partition i % 2 (so each partition's
    times rise)."""
    return [{"value": {"v": i, "k": i % 7, "ts": _time(i * 5)}, "partition": i % PARTITIONS}
            for i in range(EVENTS)]


def _time(millis: int) -> str:
    seconds, ms = divmod(millis, 1000)
    minutes, seconds = divmod(seconds, 60)
    return f"2024-01-01 00:{minutes:02d}:{seconds:02d}.{ms:03d}"


def _source_ddl(broker: DevBroker, topic: str) -> str:
    ends = ";".join(f"partition:{p},offset:{EVENTS // PARTITIONS}" for p in range(PARTITIONS))
    return f"""CREATE TABLE events (v BIGINT, k INT, ts TIMESTAMP(3),
        WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND) WITH (
        'connector' = 'kafka', 'topic' = '{topic}', 'format' = 'json',
        'properties.bootstrap.servers' = '{broker.bootstrap}',
        'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'specific-offsets',
        'scan.bounded.specific-offsets' = '{ends}')"""


def _produce_slowly(broker: DevBroker, topic: str, seconds: float) -> threading.Thread:
    events = _events()
    chunks = 20

    def produce() -> None:
        size = len(events) // chunks
        for start in range(0, len(events), size):
            broker.produce(topic, events[start:start + size])
            time.sleep(seconds / chunks)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    return thread


def _kafka_rows(broker: DevBroker, topic: str, isolation: str) -> Counter[tuple[Any, ...]]:
    records = broker.read_json(topic, isolation=isolation)
    return Counter((r["ws"], r["we"], r["k"], r["c"], r["s"]) for r in records if r)


def _run(session: Any, broker: DevBroker, tmp_path: Path, name: str, kill_at: list[float],
         seed: int) -> tuple[Counter[tuple[Any, ...]], Counter[tuple[Any, ...]],
                             Counter[tuple[Any, ...]], Any]:
    """The committed files, the topic read with read_committed and with read_uncommitted,
    and the two jobs."""
    topic = f"events_{name}"
    broker.create_topic(topic, PARTITIONS)
    broker.create_topic(f"out_{name}", 1)
    session.sql("DROP TABLE IF EXISTS events")
    session.sql(_source_ddl(broker, topic))
    files = tmp_path / f"files_{name}"
    columns = "ws TIMESTAMP(3), we TIMESTAMP(3), k INT, c BIGINT, s BIGINT"
    session.sql(f"CREATE TABLE files_{name} ({columns}) WITH ('connector' = 'filesystem', "
                f"'path' = '{files}', 'format' = 'parquet')")
    session.sql(f"CREATE TABLE kafka_{name} ({columns}) WITH ('connector' = 'kafka', "
                f"'topic' = 'out_{name}', 'format' = 'json', "
                f"'properties.bootstrap.servers' = '{broker.bootstrap}', "
                f"'sink.delivery-guarantee' = 'exactly-once', "
                f"'sink.transactional-id-prefix' = 'tx-{name}')")
    producer = _produce_slowly(broker, topic, 2.0)
    files_job = session.sql(f"INSERT INTO files_{name} {SELECT}").job
    kafka_job = session.sql(f"INSERT INTO kafka_{name} {SELECT}").job
    killer = Killer(session, kill_at, seed).start()
    try:
        statuses = [files_job.wait(120), kafka_job.wait(120)]
    finally:
        killer.stop()
        producer.join()
    assert statuses == ["FINISHED", "FINISHED"]
    assert not [p.name for p in files.glob(".*")], "files left in progress"
    kafka_rows = _kafka_rows(broker, f"out_{name}", "read_committed")
    everything = _kafka_rows(broker, f"out_{name}", "read_uncommitted")
    file_rows = Counter((str(ws)[:23], str(we)[:23], k, c, s)
                        for ws, we, k, c, s in committed_rows(files).elements())
    return file_rows, kafka_rows, everything, (files_job, kafka_job)


def _normalized(rows: Counter[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    return Counter((str(ws)[:19], str(we)[:19], k, c, s) for (ws, we, k, c, s) in rows.elements())


def _kill_times(seed: int) -> list[float]:
    """Two kills while the producer writes (about 2 s), chosen by the seed."""
    chooser = random.Random(seed)
    return sorted(chooser.uniform(0.4, 1.8) for _ in range(2))


@pytest.mark.parametrize("seed", [3])
def test_kafka_job_killed_commits_exactly_the_failure_free_output(
        kafka_broker: DevBroker, tmp_path: Path, seed: int) -> None:
    _check(kafka_broker, tmp_path, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 120))
def test_kafka_chaos_soak(kafka_broker: DevBroker, tmp_path: Path, seed: int) -> None:
    _check(kafka_broker, tmp_path, seed)


def _check(kafka_broker: DevBroker, tmp_path: Path, seed: int) -> None:
    session = chaos_session(tmp_path / "checkpoints")
    try:
        base_files, base_kafka, _, _ = _run(session, kafka_broker, tmp_path, f"base{seed}", [],
                                            0)
        # every 1 s window of the 60 s of event time has all 7 keys
        assert sum(base_files.values()) == 7 * (EVENTS * 5 // 1000)
        assert _normalized(base_files) == _normalized(base_kafka)
        for attempt in range(ATTEMPTS):
            files, kafka, everything, jobs = _run(
                session, kafka_broker, tmp_path, f"chaos{seed}_{attempt}",
                _kill_times(seed * ATTEMPTS + attempt), seed)
            assert sum(job.info().restarts for job in jobs) >= 1
            assert files == base_files
            if exactly_once(base_kafka, kafka, everything):
                return
        raise AssertionError(f"every one of {ATTEMPTS} runs had a kill inside a Kafka sink's "
                             "commit (see tests/harness/exactly_once.py)")
    finally:
        session.close()
