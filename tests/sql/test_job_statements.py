"""Parsing SHOW JOBS and STOP JOB (Flink SQL)."""

from __future__ import annotations

import pytest

from flowsql.errors import SqlSyntaxError
from flowsql.sql.statement_parser import (
    ShowJobsStatement,
    ShowTablesStatement,
    StopJobStatement,
    parse_one,
    parse_statements,
)


@pytest.mark.parametrize("text", [
    "SHOW JOBS",
    "SHOW JOBS;",
    "show jobs;",
    "Show Jobs",
    "  SHOW\n  JOBS  ;  ",
    "SHOW JOBS -- every job of the session",
    "SHOW /* all */ JOBS;",
])
def test_show_jobs_in_any_case_and_spacing(text: str) -> None:
    assert type(parse_one(text)) is ShowJobsStatement


def test_show_jobs_in_a_script_between_other_statements() -> None:
    statements = parse_statements("SHOW JOBS; show tables;\nshow jobs;;")
    assert [type(s) for s in statements] == [ShowJobsStatement, ShowTablesStatement,
                                             ShowJobsStatement]
    assert [s.source for s in statements] == ["SHOW JOBS", "show tables", "show jobs"]


@pytest.mark.parametrize(("text", "line", "col"), [
    ("SHOW JOBS extra", 1, 11),
    ("SHOW JOBS LIKE 'INSERT%';", 1, 11),
    ("SELECT 1;\nshow\n  jobs 2", 3, 8),
])
def test_show_jobs_takes_no_arguments(text: str, line: int, col: int) -> None:
    with pytest.raises(SqlSyntaxError, match="SHOW JOBS takes no arguments") as info:
        parse_statements(text)
    assert (info.value.line, info.value.col) == (line, col)


@pytest.mark.parametrize("text", ['SHOW "JOBS"', "SHOW 'jobs'", "SHOW JOB"])
def test_a_quoted_or_misspelt_jobs_is_not_show_jobs(text: str) -> None:
    with pytest.raises(SqlSyntaxError, match="unsupported statement: SHOW"):
        parse_one(text)


@pytest.mark.parametrize(("text", "job_id", "savepoint", "directory", "drain"), [
    ("STOP JOB '1'", "1", False, None, False),
    ("stop job '12' with savepoint;", "12", True, None, False),
    ("Stop Job '3' With Savepoint With Drain", "3", True, None, True),
    ("STOP JOB '4' WITH DRAIN", "4", False, None, True),
    ("STOP JOB '5'\n  WITH SAVEPOINT 's3://bucket/savepoints' -- where\n  WITH DRAIN;",
     "5", True, "s3://bucket/savepoints", True),
    ("STOP /* the first */ JOB '6' WITH SAVEPOINT '/tmp/it''s'", "6", True, "/tmp/it's",
     False),
])
def test_stop_job(text: str, job_id: str, savepoint: bool, directory: str | None,
                  drain: bool) -> None:
    statement = parse_one(text)
    assert type(statement) is StopJobStatement
    assert (statement.job_id, statement.savepoint, statement.directory, statement.drain) == (
        job_id, savepoint, directory, drain)


def test_stop_job_in_a_script_between_other_statements() -> None:
    statements = parse_statements("SHOW JOBS;\n  stop job '1' WITH SAVEPOINT;show jobs")
    assert [type(s) for s in statements] == [ShowJobsStatement, StopJobStatement,
                                             ShowJobsStatement]
    assert statements[1].source == "stop job '1' WITH SAVEPOINT"


@pytest.mark.parametrize(("text", "message", "line", "col"), [
    ("STOP JOB", "STOP JOB needs the job id as a string", 1, 9),
    ("STOP JOB 1", "STOP JOB needs the job id as a string", 1, 10),
    ("SHOW JOBS;\nSTOP JOB \"1\";", "STOP JOB needs the job id as a string", 2, 10),
    ("STOP JOB '1' WITH", "expected WITH SAVEPOINT or WITH DRAIN or the end", 1, 14),
    ("STOP JOB '1' SAVEPOINT", "expected WITH SAVEPOINT or WITH DRAIN or the end", 1, 14),
    ("STOP JOB '1'\n  WITH SAVEPOINT dir", "expected WITH DRAIN or the end", 2, 18),
    ("STOP JOB '1' WITH DRAIN WITH SAVEPOINT", "WITH SAVEPOINT comes before WITH DRAIN",
     1, 25),
    ("STOP JOB '1' WITH DRAIN x", "expected the end of the statement", 1, 25),
    ("STOP JOB '1' WITH SAVEPOINT ''", "the savepoint directory is empty", 1, 29),
])
def test_stop_job_errors_point_at_the_token(text: str, message: str, line: int,
                                             col: int) -> None:
    with pytest.raises(SqlSyntaxError, match=message) as info:
        parse_statements(text)
    assert (info.value.line, info.value.col) == (line, col)
    assert "STOP JOB '<id>' [WITH SAVEPOINT" in str(info.value)
