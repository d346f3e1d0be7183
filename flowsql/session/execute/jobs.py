"""SHOW JOBS: the session's jobs (``INSERT INTO``), one row each, in submission order;
STOP JOB: ending one of them, with a savepoint if asked.

The first four columns of SHOW JOBS are Flink's (``job id``, ``job name``, ``status``,
``start time``); recovery adds ``restarts``, the last completed checkpoint's id and
completion time and the last savepoint's location.
``job id`` is a STRING as in Flink (there a 32-digit hex id, here the job number), so
client code that reads Flink's result reads this one. ``start time`` and ``last checkpoint
time`` are instants, TIMESTAMP_LTZ(3): Flink declares ``start time`` as TIMESTAMP_LTZ
with its default precision 6 but fills it from epoch milliseconds, so precision 3 loses
nothing and is the precision every other flowsql instant (PROCTIME()) has.

``STOP JOB '<id>' WITH SAVEPOINT`` returns one row, as Flink does: the savepoint's path
(column ``savepoint path``); without a savepoint it returns a message once the job ended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.session.result import Result
from flowsql.sql.statement_parser import ShowJobsStatement, StopJobStatement

if TYPE_CHECKING:
    from flowsql.runtime.streaming.job import JobInfo
    from flowsql.session.session import Session

__all__ = ["SHOW_JOBS_SCHEMA", "STOP_JOB_SCHEMA", "execute_show_jobs", "execute_stop_job"]

_INSTANT = pa.timestamp("ms", tz="UTC")  # TIMESTAMP_LTZ(3)

SHOW_JOBS_SCHEMA = pa.schema([
    pa.field("job id", pa.string(), nullable=False),
    pa.field("job name", pa.string(), nullable=False),
    pa.field("status", pa.string(), nullable=False),
    pa.field("start time", _INSTANT, nullable=False),
    pa.field("restarts", pa.int64(), nullable=False),
    # null until the job's first checkpoint completes (always, without checkpointing)
    pa.field("last checkpoint id", pa.int64()),
    pa.field("last checkpoint time", _INSTANT),
    # null until the job is stopped with a savepoint
    pa.field("last savepoint", pa.string()),
])

STOP_JOB_SCHEMA = pa.schema([pa.field("savepoint path", pa.string(), nullable=False)])


def execute_show_jobs(session: Session, statement: ShowJobsStatement) -> Result:
    infos: list[JobInfo] = [job.info() for job in session.jobs]
    last = [info.last_checkpoint for info in infos]
    columns = [
        [str(info.id) for info in infos],
        [info.name for info in infos],
        [info.status for info in infos],
        [info.start_time_ms for info in infos],
        [info.restarts for info in infos],
        [None if c is None else c.id for c in last],
        [None if c is None else c.completed_ms for c in last],
        [info.last_savepoint for info in infos],
    ]
    arrays = [pa.array(values, field.type) for values, field in zip(columns, SHOW_JOBS_SCHEMA)]
    return Result("show", table=pa.Table.from_arrays(arrays, schema=SHOW_JOBS_SCHEMA))


def execute_stop_job(session: Session, statement: StopJobStatement) -> Result:
    job = next((job for job in session.jobs if str(job.id) == statement.job_id), None)
    if job is None:
        known = ", ".join(f"'{j.id}'" for j in session.jobs) or "none"
        raise ExecutionError(f"STOP JOB: no job '{statement.job_id}' in this session "
                             f"(SHOW JOBS lists them; known: {known})")
    location = job.stop(savepoint=statement.savepoint, directory=statement.directory,
                        drain=statement.drain)
    if location is None:
        return Result("ddl", message=f"Job {job.id} stopped: {job.status()}")
    table = pa.Table.from_arrays([pa.array([location], pa.string())], schema=STOP_JOB_SCHEMA)
    return Result("show", table=table, message=f"Job {job.id} stopped with savepoint "
                                               f"{location}")
