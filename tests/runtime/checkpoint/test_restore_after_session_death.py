"""The session process dies (kill -9) while a checkpointed INSERT runs; a new session
starts the same INSERT from the last retained checkpoint (``execution.savepoint.path``)
and the table ends up with every row exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import flowsql
from flowsql.errors import ExecutionError
from tests.harness.chaos import committed_rows, latest_checkpoint

ROWS = 40_000


def _statements(out: Path, checkpoints: Path, parallelism: int) -> list[str]:
    return [
        "SET 'execution.runtime-mode' = 'streaming'",
        f"SET 'parallelism.default' = '{parallelism}'",
        "SET 'execution.checkpointing.interval' = '200 ms'",
        f"SET 'execution.checkpointing.dir' = '{checkpoints}'",
        "SET 'execution.checkpointing.num-retained' = '3'",
        "CREATE TABLE src (v BIGINT) WITH ('connector' = 'datagen', "
        "'rows-per-second' = '8000', 'fields.v.kind' = 'sequence', 'fields.v.start' = '1', "
        f"'fields.v.end' = '{ROWS}')",
        f"CREATE TABLE out_t (v BIGINT) WITH ('connector' = 'filesystem', 'path' = '{out}', "
        "'format' = 'parquet')",
    ]


@pytest.mark.parametrize(("parallelism", "checkpoints_after"),
                         [(1, True), (2, True), (1, False)])
def test_a_new_session_continues_from_the_last_checkpoint(
        tmp_path: Path, parallelism: int, checkpoints_after: bool) -> None:
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    statements = _statements(out, checkpoints, parallelism)
    script = ("import flowsql, time\n"
              f"session = flowsql.connect()\n"
              f"for statement in {statements!r}:\n"
              "    session.sql(statement)\n"
              "session.sql('INSERT INTO out_t SELECT v FROM src').job.wait()\n")
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not committed_rows(out) or latest_checkpoint(checkpoints) is None:
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
    before = committed_rows(out)
    assert 0 < sum(before.values()) < ROWS, "the kill did not land inside the job"

    session = flowsql.connect()
    try:
        for statement in statements:
            if checkpoints_after or "checkpointing" not in statement:
                session.sql(statement)
        session.sql(f"SET 'execution.savepoint.path' = '{checkpoint}'")
        job = session.sql("INSERT INTO out_t SELECT v FROM src").job
        assert job.wait(120) == "FINISHED"
    finally:
        session.close()
    rows = committed_rows(out)
    assert sorted(v for (v,) in rows.elements()) == list(range(1, ROWS + 1))
    assert not sorted(p.name for p in out.glob(".*"))


def test_a_path_that_is_no_checkpoint_is_refused(tmp_path: Path) -> None:
    session = flowsql.connect()
    try:
        for statement in _statements(tmp_path / "out", tmp_path / "checkpoints", 1):
            session.sql(statement)
        session.sql(f"SET 'execution.savepoint.path' = '{tmp_path}/job/chk-3'")
        with pytest.raises(ExecutionError, match="is not a completed checkpoint"):
            session.sql("INSERT INTO out_t SELECT v FROM src")
    finally:
        session.close()
