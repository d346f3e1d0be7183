"""STOP JOB from the REPL: the help names it, a stop with savepoint prints the one-row
result and the savepoint's full path, and an error keeps the shell going."""

from __future__ import annotations

import io
import time
from pathlib import Path

import flowsql
from flowsql.shell.interpreter import Interpreter


def test_help_names_stop_job() -> None:
    out = io.StringIO()
    with flowsql.connect() as session:
        Interpreter(session, out=out, err=io.StringIO()).handle("\\?")
    assert "STOP JOB '<id>' [WITH SAVEPOINT] [WITH DRAIN];" in out.getvalue()


def test_stop_job_with_savepoint_prints_the_savepoint_path(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    settings = {"execution.runtime-mode": "streaming",
                "execution.checkpointing.interval": "200 ms",
                "execution.checkpointing.dir": str(tmp_path / "checkpoints"),
                "state.savepoints.dir": str(tmp_path / "savepoints")}
    with flowsql.connect(**settings) as session:
        interpreter = Interpreter(session, out=out, err=err)
        interpreter.handle("CREATE TABLE g (id BIGINT) WITH ('connector' = 'datagen', "
                           "'rows-per-second' = '100');\n"
                           "CREATE TABLE b (id BIGINT) WITH ('connector' = 'blackhole');\n"
                           "INSERT INTO b SELECT id FROM g;")
        (job,) = session.jobs
        deadline = time.monotonic() + 60
        while job.info().last_checkpoint is None:  # the job runs and checkpoints
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert interpreter.handle("STOP JOB '42';") is True
        assert "no job '42' in this session" in err.getvalue()
        out.truncate(0)
        out.seek(0)
        assert interpreter.handle(f"STOP JOB '{job.id}' WITH SAVEPOINT;") is True
        assert job.status() == "FINISHED"
    (savepoint,) = (tmp_path / "savepoints").iterdir()
    assert (savepoint / "_metadata").is_file()
    lines = out.getvalue().splitlines()
    assert lines[0].strip() == "savepoint path"
    assert lines[2].startswith(str(savepoint)[:30])  # the cell may be cut ...
    assert lines[3].startswith("1 row in ")
    assert lines[4] == f"Job {job.id} stopped with savepoint {savepoint}"  # ... not this
