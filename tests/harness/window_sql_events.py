"""Inputs shared by the window aggregate SQL tests: CSV files of (k, ts, v) rows, with ts
in seconds after 2024-01-01, and sessions that declare them with
``WATERMARK FOR ts AS ts - INTERVAL '2' SECOND`` and a watermark after every record.

``LATE``, in file order (k, ts, v) with the watermark each row sees on arrival::

    a@1 v1 (-inf)  b@2 v1 (-1)  a@3 v2 (0)  c@8 v3 (1)
    d@4 v5 (6)     [0, 5) fired at 6: d joins only its later windows
    a@12 v4 (6)
    e@9 v6 (10)    every TUMBLE / CUMULATE window of e fired at 10: late; HOP [5, 15) open
    a@13 v4 (10)   f@25 v7 (11)

``SPLIT`` is two files, in order within each file and file 0 before file 1 in time, so no
row is late at either parallelism whatever the interleaving; a, value 2, is in both
subtasks' shares of the windows ending at 5 and 10.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import flowsql

EPOCH = dt.datetime(2024, 1, 1)
LATE = [("a", 1, 1), ("b", 2, 1), ("a", 3, 2), ("c", 8, 3), ("d", 4, 5), ("a", 12, 4),
        ("e", 9, 6), ("a", 13, 4), ("f", 25, 7)]
SPLIT = [[("a", 1, 1), ("b", 2, 1), ("a", 3, 2)],
         [("a", 4, 2), ("c", 8, 3), ("a", 12, 4), ("a", 13, 4), ("f", 25, 7)]]


def write_csv_files(directory: Path, files: list[list[tuple[str, int, int]]]) -> Path:
    """One CSV file per list of (k, ts seconds, v): at parallelism 2 the source subtask
    ``i`` reads file ``i``."""
    directory.mkdir()
    for i, rows in enumerate(files):
        (directory / f"{i}.csv").write_text("".join(
            f"{k},{EPOCH + dt.timedelta(seconds=s)},{v}\n" for k, s, v in rows))
    return directory


def event_session(directory: Path, mode: str, parallelism: int) -> flowsql.Session:
    """A session in ``mode`` (streaming or batch) at ``parallelism``, one row per batch,
    with table ``t (k STRING, ts TIMESTAMP(3), v BIGINT)`` over the CSV files in
    ``directory``."""
    session = flowsql.connect(**{"execution.runtime-mode": mode,
                                 "pipeline.auto-watermark-interval": "0",
                                 "execution.batch-size": "1",
                                 "parallelism.default": str(parallelism)})
    session.sql(f"""CREATE TABLE t (k STRING, ts TIMESTAMP(3), v BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
                    WITH ('connector' = 'filesystem', 'path' = '{directory}',
                          'format' = 'csv')""")
    return session
