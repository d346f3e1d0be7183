"""Stopping a streaming INSERT -- ``job.cancel()``, closing the session, Ctrl-C or SIGTERM
of the ``flowsql`` command -- leaves no in-progress file and no worker process behind, and
the rows it committed are each written once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import flowsql
from tests.harness.chaos import committed_rows

SOURCE = ("CREATE TABLE src (v BIGINT) WITH ('connector' = 'datagen', "
          "'rows-per-second' = '20000', 'fields.v.kind' = 'sequence', "
          "'fields.v.start' = '1', 'fields.v.end' = '1000000000')")


def _sink_ddl(out: Path) -> str:
    return (f"CREATE TABLE out_t (v BIGINT) WITH ('connector' = 'filesystem', "
            f"'path' = '{out}', 'format' = 'parquet')")


def _settings(checkpoints: Path | None, parallelism: int) -> dict[str, str]:
    settings = {"execution.runtime-mode": "streaming",
                "parallelism.default": str(parallelism)}
    if checkpoints is not None:
        settings["execution.checkpointing.interval"] = "300 ms"
        settings["execution.checkpointing.dir"] = str(checkpoints)
    return settings


def _wait_until_written(job: Any, timeout_s: float = 60.0) -> None:
    """Until the job's sink has written rows (the workers may still be starting)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        written = sum(m.get("records_written", 0) for m in job.metrics())
        if written:
            time.sleep(1.0)  # a few checkpoints more
            return
        time.sleep(0.1)
    raise AssertionError("the job wrote nothing")


def _check_output(out: Path) -> Counter[tuple[Any, ...]]:
    hidden = sorted(p.name for p in out.glob(".*"))
    assert not hidden, f"files left in progress: {hidden}"
    rows = committed_rows(out)
    assert rows, "nothing was committed"
    assert max(rows.values()) == 1, "a row was committed twice"
    return rows


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().split()[2] != "Z":
                    alive.append(pid)
        except FileNotFoundError:
            pass
    return alive


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("checkpointing", [True, False])
def test_cancel_commits_what_was_written_and_leaves_nothing_hidden(
        tmp_path: Path, parallelism: int, checkpointing: bool) -> None:
    session = flowsql.connect(**_settings(tmp_path / "checkpoints" if checkpointing else None,
                                          parallelism))
    try:
        session.sql(SOURCE)
        session.sql(_sink_ddl(tmp_path / "out"))
        job = session.sql("INSERT INTO out_t SELECT v FROM src").job
        _wait_until_written(job)
        job.cancel()
        assert job.wait(30) == "CANCELED"
        rows = _check_output(tmp_path / "out")
        if parallelism == 1:  # one source subtask: the committed rows are a prefix
            assert sorted(v for (v,) in rows) == list(range(1, len(rows) + 1))
        pids = session.parallel_runner.worker_pids if session.parallel_runner else []
    finally:
        session.close()
    deadline = time.monotonic() + 10
    while _alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pids)


def test_closing_the_session_stops_its_jobs_with_a_final_checkpoint(tmp_path: Path) -> None:
    session = flowsql.connect(**_settings(tmp_path / "checkpoints", 2))
    session.sql(SOURCE)
    session.sql(_sink_ddl(tmp_path / "out"))
    job = session.sql("INSERT INTO out_t SELECT v FROM src").job
    _wait_until_written(job)
    session.close()
    assert job.status() == "CANCELED"
    _check_output(tmp_path / "out")


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    found.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                pass
    return found


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupting_the_command_stops_the_job_cleanly(tmp_path: Path, signum: int,
                                                        status: int) -> None:
    script = tmp_path / "job.sql"
    out = tmp_path / "out"
    script.write_text(
        f"SET 'execution.runtime-mode' = 'streaming';\nSET 'parallelism.default' = '2';\n"
        f"SET 'execution.checkpointing.interval' = '300 ms';\n"
        f"SET 'execution.checkpointing.dir' = '{tmp_path / 'checkpoints'}';\n"
        f"{SOURCE};\n{_sink_ddl(out)};\nINSERT INTO out_t SELECT v FROM src;\n")
    errors = tmp_path / "stderr.txt"
    with errors.open("wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "flowsql", "-f", str(script)],
                                   stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 60
        while len(_children(process.pid)) < 2 or not committed_rows(out):
            assert process.poll() is None, errors.read_text()
            assert time.monotonic() < deadline, "the job did not start writing"
            time.sleep(0.2)
        workers = _children(process.pid)
        process.send_signal(signum)
        assert process.wait(60) == status, errors.read_text()
    finally:
        if process.poll() is None:
            process.kill()
    _check_output(out)
    deadline = time.monotonic() + 10
    while _alive(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(workers)
