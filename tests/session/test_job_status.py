"""How a job's status, restarts and last checkpoint follow its run's checkpoint summary.

Runs that restart after failures report a summary; this unit test drives a Job with a
scripted run whose summary it sets, so RESTARTING and the checkpoint columns of SHOW JOBS
are checked without making a real job fail and recover.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import ExecutionError
from flowsql.runtime.streaming.job import CheckpointInfo, Job, JobInfo


class ScriptedRun:
    """A run that produces nothing until the test ends it (``finish``/``fail``/``cancel``);
    it has no ``checkpoint_summary``, as a batch-mode run."""

    def __init__(self) -> None:
        self._end = threading.Event()
        self._error: Exception | None = None
        self._cancelled = False

    def batches(self) -> Iterator[pa.RecordBatch]:
        self._end.wait(30)
        if self._error is not None:
            raise self._error
        yield from ()

    def finish(self) -> None:
        self._end.set()

    def fail(self, error: Exception) -> None:
        self._error = error
        self._end.set()

    def cancel(self) -> None:
        self._cancelled = True
        self._end.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def metrics(self) -> list[dict[str, Any]]:
        return []


class SummarizingRun(ScriptedRun):
    """A scripted run that reports whatever ``summary`` holds, as a recovering run."""

    def __init__(self, summary: dict[str, Any] | None) -> None:
        super().__init__()
        self.summary = summary

    def checkpoint_summary(self) -> dict[str, Any] | None:
        return self.summary


def summary(restarting: bool, restarts: int = 0,
            last: dict[str, int] | None = None) -> dict[str, Any]:
    return {"restarts": restarts, "restarting": restarting, "last_checkpoint": last,
            "checkpoints_completed": 0 if last is None else last["id"],
            "checkpoints_failed": 1}


CHECKPOINT_7 = {"id": 7, "duration_ms": 120, "size_bytes": 4096, "alignment_ms": 3,
                "completed_ms": 1_700_000_000_250}


@pytest.fixture()
def run() -> Iterator[SummarizingRun]:
    scripted = SummarizingRun(summary(restarting=False))
    yield scripted
    scripted.finish()


def test_a_live_job_is_restarting_while_its_run_waits_to_restart(run: SummarizingRun) -> None:
    job = Job("INSERT INTO t", run)
    assert job.status() == "RUNNING"
    run.summary = summary(restarting=True, restarts=1)
    assert job.status() == "RESTARTING"
    assert job.info().status == "RESTARTING"
    run.summary = summary(restarting=False, restarts=1)
    assert job.status() == "RUNNING"
    run.summary = None
    assert job.status() == "RUNNING"


@pytest.mark.parametrize(("end", "status"), [
    (lambda r: r.finish(), "FINISHED"),
    (lambda r: r.cancel(), "CANCELED"),
    (lambda r: r.fail(ExecutionError("boom")), "FAILED"),
])
def test_an_ended_job_keeps_its_final_status_whatever_the_summary_says(
        run: SummarizingRun, end: Any, status: str) -> None:
    job = Job("INSERT INTO t", run)
    run.summary = summary(restarting=True, restarts=2)
    end(run)
    job.join(30)
    assert job.status() == status
    assert job.info().status == status


def test_info_carries_restarts_and_the_last_checkpoint(run: SummarizingRun) -> None:
    job = Job("INSERT INTO t", run)
    run.summary = summary(restarting=False, restarts=3, last=CHECKPOINT_7)
    assert job.info() == JobInfo(
        job.id, "INSERT INTO t", "RUNNING", job.start_time_ms, restarts=3,
        last_checkpoint=CheckpointInfo(id=7, duration_ms=120, size_bytes=4096,
                                       alignment_ms=3, completed_ms=1_700_000_000_250),
        checkpoints_completed=7, checkpoints_failed=1)


def test_a_run_without_a_summary_has_no_restarts_and_no_checkpoint() -> None:
    run = ScriptedRun()
    job = Job("INSERT INTO t", run)
    try:
        assert job.info() == JobInfo(job.id, "INSERT INTO t", "RUNNING", job.start_time_ms,
                                     restarts=0, last_checkpoint=None,
                                     checkpoints_completed=0, checkpoints_failed=0)
    finally:
        run.finish()
    job.join(30)
    assert job.status() == "FINISHED"


def test_show_jobs_shows_restarting_and_the_last_checkpoint(run: SummarizingRun) -> None:
    with flowsql.connect() as session:
        job = Job("INSERT INTO t", run)
        session.jobs.append(job)
        run.summary = summary(restarting=True, restarts=2, last=CHECKPOINT_7)
        assert session.sql("SHOW JOBS").to_arrow().to_pylist() == [{
            "job id": str(job.id), "job name": "INSERT INTO t", "status": "RESTARTING",
            "start time": datetime.fromtimestamp(job.start_time_ms / 1000, UTC),
            "restarts": 2, "last checkpoint id": 7,
            "last checkpoint time": datetime(2023, 11, 14, 22, 13, 20, 250000, UTC),
            "last savepoint": None}]
