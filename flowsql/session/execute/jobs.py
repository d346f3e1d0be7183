"""SHOW JOBS: the session's jobs (``INSERT INTO``), one row each, in submission order.

The first four columns are Flink's (``job id``, ``job name``, ``status``, ``start time``);
recovery adds ``restarts`` and the last completed checkpoint's id and completion time.
``job id`` is a STRING as in Flink (there a 32-digit hex id, here the job number), so
client code that reads Flink's result reads this one. ``start time`` and ``last checkpoint
time`` are instants, TIMESTAMP_LTZ(3): Flink declares ``start time`` as TIMESTAMP_LTZ
with its default precision 6 but fills it from epoch milliseconds, so precision 3 loses
nothing and is the precision every other flowsql instant (PROCTIME()) has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from flowsql.session.result import Result
from flowsql.sql.statement_parser import ShowJobsStatement

if TYPE_CHECKING:
    from flowsql.runtime.streaming.job import JobInfo
    from flowsql.session.session import Session

__all__ = ["SHOW_JOBS_SCHEMA", "execute_show_jobs"]

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
])


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
    ]
    arrays = [pa.array(values, field.type) for values, field in zip(columns, SHOW_JOBS_SCHEMA)]
    return Result("show", table=pa.Table.from_arrays(arrays, schema=SHOW_JOBS_SCHEMA))
