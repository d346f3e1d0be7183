"""Small event tables for streaming SQL tests: Parquet files of (k, v, ts) rows with
ts in seconds after 2024-01-01, and sessions that declare them with a 2-second
watermark delay and per-record watermarks, in streaming or batch mode."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import flowsql

EPOCH = dt.datetime(2024, 1, 1)
#: the same two inputs serve the window join and the windowed aggregate tests
LEFT = [("a", 1, 1), ("b", 2, 4), ("c", 4, 11), ("a", 5, 9), ("a", 3, 12), ("b", 6, 25)]
RIGHT = [("a", 10, 2), ("c", 20, 3), ("a", 30, 14), ("b", 40, 15), ("d", 50, 27)]


def at(seconds: float) -> dt.datetime:
    return EPOCH + dt.timedelta(seconds=seconds)


def write_events(path: Path, data: list[tuple[str, int, int]]) -> Path:
    """(k, v, ts seconds) rows, in this order, as one Parquet file."""
    pq.write_table(pa.table({
        "k": [r[0] for r in data], "v": pa.array([r[1] for r in data], pa.int64()),
        "ts": pa.array([at(r[2]) for r in data], pa.timestamp("ms"))}), path)
    return path


def events_session(files: dict[str, Path], mode: str) -> flowsql.Session:
    """A session in ``mode`` with a table per file, one record per batch (so watermarks
    move between every two rows)."""
    s = flowsql.connect(**{"execution.runtime-mode": mode,
                           "pipeline.auto-watermark-interval": "0",
                           "execution.batch-size": "1"})
    for name, path in files.items():
        s.sql(f"""CREATE TABLE {name} (k STRING, v BIGINT, ts TIMESTAMP(3),
                    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
                  WITH ('connector' = 'filesystem', 'path' = '{path}')""")
    return s


def sorted_rows(session: flowsql.Session, sql: str) -> list[tuple]:
    table = session.sql(sql).to_arrow()
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)
