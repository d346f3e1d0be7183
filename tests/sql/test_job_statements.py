"""Parsing SHOW JOBS (Flink SQL) and the not-yet-supported STOP JOB."""

from __future__ import annotations

import pytest

from flowsql.errors import SqlSyntaxError
from flowsql.sql.statement_parser import (
    ShowJobsStatement,
    ShowTablesStatement,
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


def test_stop_job_says_it_is_not_supported_yet() -> None:
    with pytest.raises(SqlSyntaxError,
                       match="STOP JOB is not supported yet; SHOW JOBS lists the jobs") as info:
        parse_statements("SHOW JOBS;\n  stop job '1' WITH SAVEPOINT")
    assert (info.value.line, info.value.col) == (2, 3)
