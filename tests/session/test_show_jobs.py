"""SHOW JOBS over real jobs: the exact rows for running, cancelled, finished and failed
INSERT INTO jobs, in submission order."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import FlowSQLError
from flowsql.runtime.streaming.job import Job

INSTANT = pa.timestamp("ms", tz="UTC")

SHOW_JOBS_COLUMNS = [
    ("job id", pa.string(), False),
    ("job name", pa.string(), False),
    ("status", pa.string(), False),
    ("start time", INSTANT, False),
    ("restarts", pa.int64(), False),
    ("last checkpoint id", pa.int64(), True),
    ("last checkpoint time", INSTANT, True),
    ("last savepoint", pa.string(), True),
]


@pytest.fixture()
def session(tmp_path: Path) -> Iterator[flowsql.Session]:
    s = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    # Unbounded: datagen without number-of-rows runs until cancelled.
    s.sql("""CREATE TABLE endless (id BIGINT, v INT)
             WITH ('connector' = 'datagen', 'rows-per-second' = '200')""")
    s.sql("""CREATE TABLE five (id BIGINT, v INT)
             WITH ('connector' = 'datagen', 'number-of-rows' = '5')""")
    (tmp_path / "bad.csv").write_text("1\nnot a number\n")
    s.sql(f"""CREATE TABLE bad (n BIGINT) WITH ('connector' = 'filesystem',
                'path' = '{tmp_path / "bad.csv"}', 'format' = 'csv')""")
    s.sql("CREATE TABLE out (id BIGINT, v INT) WITH ('connector' = 'blackhole')")
    s.sql("CREATE TABLE out_n (n BIGINT) WITH ('connector' = 'blackhole')")
    yield s
    s.close()


def show_jobs(session: flowsql.Session) -> list[dict[str, Any]]:
    table = session.sql("SHOW JOBS").to_arrow()
    assert [(f.name, f.type, f.nullable) for f in table.schema] == SHOW_JOBS_COLUMNS
    return table.to_pylist()


def row(job: Job, status: str) -> dict[str, Any]:
    """The row SHOW JOBS must show for ``job`` (no checkpointing: no restarts, no
    checkpoint)."""
    return {"job id": str(job.id), "job name": job.name, "status": status,
            "start time": datetime.fromtimestamp(job.start_time_ms / 1000, UTC),
            "restarts": 0, "last checkpoint id": None, "last checkpoint time": None,
            "last savepoint": None}


def submit(session: flowsql.Session, sql: str) -> Job:
    before = time.time_ns() // 1_000_000
    job = session.sql(sql).job
    after = time.time_ns() // 1_000_000
    assert before <= job.start_time_ms <= after, "the start time is the submission time"
    return job


def wait_for_rows_written(job: Job) -> None:
    """Until the job's sink has written rows: the job is running, not just submitted."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        sink = next(m for m in job.metrics() if m["operator"].startswith("SinkExec"))
        if sink.get("records_written", 0) > 0:
            return
        time.sleep(0.02)
    raise AssertionError(f"job {job.id} wrote nothing in 30 s: {job.status()}")


def test_no_jobs_is_an_empty_table_with_the_columns() -> None:
    with flowsql.connect() as s:
        assert show_jobs(s) == []


def test_a_running_insert_over_an_unbounded_datagen_table(session: flowsql.Session) -> None:
    job = submit(session, "INSERT INTO out SELECT id, v FROM endless")
    wait_for_rows_written(job)
    assert show_jobs(session) == [row(job, "RUNNING")]
    assert job.name == "INSERT INTO out"


def test_a_cancelled_job_is_canceled(session: flowsql.Session) -> None:
    job = submit(session, "INSERT INTO out SELECT id, v FROM endless")
    job.cancel()
    assert job.wait(30) == "CANCELED"
    assert show_jobs(session) == [row(job, "CANCELED")]


def test_a_bounded_insert_that_ended_is_finished(session: flowsql.Session) -> None:
    job = submit(session, "INSERT INTO out SELECT id, v FROM five")
    assert job.wait(30) == "FINISHED"
    assert show_jobs(session) == [row(job, "FINISHED")]


def test_a_failing_job_is_failed(session: flowsql.Session) -> None:
    job = submit(session, "INSERT INTO out_n SELECT n FROM bad")
    with pytest.raises(FlowSQLError, match="bad.csv"):
        job.wait(30)
    assert show_jobs(session) == [row(job, "FAILED")]


def test_jobs_are_listed_in_submission_order_whatever_their_status(
        session: flowsql.Session) -> None:
    finished = submit(session, "INSERT INTO out SELECT id, v FROM five")
    finished.join(30)
    failed = submit(session, "INSERT INTO out_n SELECT n FROM bad")
    failed.join(30)
    running = submit(session, "insert into out select id, v from endless")
    cancelled = submit(session, "INSERT INTO out SELECT id + 1, v FROM endless")
    cancelled.cancel()
    cancelled.join(30)
    assert session.sql("show jobs;").to_arrow().to_pylist() == [
        row(finished, "FINISHED"), row(failed, "FAILED"), row(running, "RUNNING"),
        row(cancelled, "CANCELED")]
    assert [r["job name"] for r in show_jobs(session)] == [
        "INSERT INTO out", "INSERT INTO out_n", "INSERT INTO out", "INSERT INTO out"]


def test_a_batch_mode_insert_is_listed_too(session: flowsql.Session) -> None:
    session.sql("SET 'execution.runtime-mode' = 'batch'")
    job = submit(session, "INSERT INTO out SELECT id, v FROM five")
    assert job.wait(30) == "FINISHED"
    assert show_jobs(session) == [row(job, "FINISHED")]


def test_job_info_is_the_record_behind_the_row(session: flowsql.Session) -> None:
    job = submit(session, "INSERT INTO out SELECT id, v FROM five")
    assert job.wait(30) == "FINISHED"
    info = job.info()
    assert (info.id, info.name, info.status, info.start_time_ms, info.restarts,
            info.last_checkpoint, info.checkpoints_completed, info.checkpoints_failed) == (
        job.id, "INSERT INTO out", "FINISHED", job.start_time_ms, 0, None, 0, 0)
