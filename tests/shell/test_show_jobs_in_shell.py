"""SHOW JOBS from the REPL: the help names it, and it prints the job the shell started."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime

import flowsql
from flowsql.shell.interpreter import HELP_TEXT, Interpreter


def test_help_names_show_jobs() -> None:
    out = io.StringIO()
    with flowsql.connect() as session:
        Interpreter(session, out=out, err=io.StringIO()).handle("\\?")
    assert "SHOW JOBS;" in out.getvalue()
    assert out.getvalue() == HELP_TEXT + "\n\n"


def test_show_jobs_prints_the_job_an_insert_started() -> None:
    out, err = io.StringIO(), io.StringIO()
    with flowsql.connect(**{"execution.runtime-mode": "streaming"}) as session:
        interpreter = Interpreter(session, out=out, err=err)
        interpreter.handle("CREATE TABLE g (id BIGINT) WITH ('connector' = 'datagen', "
                           "'number-of-rows' = '3');\n"
                           "CREATE TABLE b (id BIGINT) WITH ('connector' = 'blackhole');\n"
                           "INSERT INTO b SELECT id FROM g;")
        (job,) = session.jobs
        assert job.wait(30) == "FINISHED"
        out.truncate(0)
        out.seek(0)
        assert interpreter.handle("show jobs;") is True
    assert err.getvalue() == ""
    started = datetime.fromtimestamp(job.start_time_ms // 1000, UTC)
    start_time = f"{started:%Y-%m-%d %H:%M:%S}.{job.start_time_ms % 1000:03d}Z"
    assert re.fullmatch(
        r"job id \| job name +\| status +\| start time +\| restarts \| last checkpoint id "
        r"\| last checkpoint time \| last savepoint\n"
        r"[-+]+\n"
        rf"{job.id} +\| INSERT INTO b \| FINISHED \| {re.escape(start_time)} "
        r"\| +0 \| +NULL \| NULL +\| NULL\n"
        r"1 row in \d+\.\d\d s\n\n", out.getvalue()), out.getvalue()
