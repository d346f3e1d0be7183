"""DESCRIBE JOB '<id>': one job's SHOW JOBS row (Flink's DESCRIBE JOB returns that row),
followed in the message by what the job's operators did so far and, for a failed job, its
error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.session.execute.jobs import execute_show_jobs
from flowsql.session.result import Result
from flowsql.sql.statement_parser import DescribeJobStatement, ShowJobsStatement

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["execute_describe_job", "operator_lines"]

_END_OF_INPUT = 2**63 - 1  # the watermark an ended input passes on


def execute_describe_job(session: Session, statement: DescribeJobStatement) -> Result:
    job = next((job for job in session.jobs if str(job.id) == statement.job_id), None)
    if job is None:
        known = ", ".join(f"'{j.id}'" for j in session.jobs) or "none"
        raise ExecutionError(f"DESCRIBE JOB: no job '{statement.job_id}' in this session "
                             f"(SHOW JOBS lists them; known: {known})")
    everything = execute_show_jobs(session, ShowJobsStatement(statement.text,
                                                              statement.start,
                                                              statement.end)).table
    assert everything is not None
    row = everything.filter(pc.equal(everything["job id"], str(job.id)))
    lines = operator_lines(job.metrics())
    error = getattr(job, "_error", None)
    if error is not None:
        lines.append(f"error: {error}")
    return Result("show", table=row, message="\n".join(lines) or None)


def operator_lines(metrics: list[dict[str, Any]]) -> list[str]:
    """One line per operator: its label, records in and out, and its watermark if any."""
    lines = []
    for m in metrics:
        line = f"{m['operator']}: {m.get('records_in', 0)} in, {m.get('records_out', 0)} out"
        watermark = m.get("watermark")
        if watermark == _END_OF_INPUT:
            line += ", input ended"
        elif watermark is not None:
            line += f", watermark {watermark}"
        lines.append(line)
    return lines
