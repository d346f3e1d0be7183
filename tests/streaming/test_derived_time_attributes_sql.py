"""Time attributes that survive a derived table (Flink): a window aggregate's
``window_time`` and an interval join's rowtime columns are rowtime attributes, so a window
TVF over a CTE made of them runs in streaming mode. Hand-checked rows, in order (no late
rows), so batch mode gives the same rows.

orders (k, ts in seconds): a 1, b 2, a 4, a 6, b 7, a 11, b 12, a 16, b 21
clicks (k, ts): a 1, a 6, b 12
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql

EPOCH = dt.datetime(2024, 1, 1)
ORDERS = [("a", 1), ("b", 2), ("a", 4), ("a", 6), ("b", 7), ("a", 11), ("b", 12), ("a", 16),
          ("b", 21)]
CLICKS = [("a", 1), ("a", 6), ("b", 12)]


def _write(path: Path, rows: list[tuple[str, int]]) -> Path:
    pq.write_table(pa.table({
        "k": [r[0] for r in rows],
        "ts": pa.array([EPOCH + dt.timedelta(seconds=r[1]) for r in rows],
                       pa.timestamp("ms"))}), path)
    return path


@pytest.fixture(params=["streaming", "batch"])
def session(request: pytest.FixtureRequest, tmp_path: Path) -> flowsql.Session:
    s = flowsql.connect(**{"execution.runtime-mode": request.param})
    for name, rows in (("orders", ORDERS), ("clicks", CLICKS)):
        s.sql(f"CREATE TABLE {name} (k STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) "
              f"WITH ('connector' = 'filesystem', "
              f"'path' = '{_write(tmp_path / f'{name}.parquet', rows)}')")
    return s


def _rows(s: flowsql.Session, sql: str) -> list[tuple]:
    return sorted(tuple(r.values()) for r in s.sql(sql).to_arrow().to_pylist())


def at(seconds: int) -> dt.datetime:
    return EPOCH + dt.timedelta(seconds=seconds)


def test_window_tvf_over_a_window_aggregates_window_time(session) -> None:
    # 5 s counts per k: [0,5) a 2 b 1; [5,10) a 1 b 1; [10,15) a 1 b 1; [15,20) a 1;
    # [20,25) b 1; their window_time (end - 1 ms) falls in the 10 s windows
    # [0,10): 2 1 1 1; [10,20): 1 1 1; [20,30): 1
    assert _rows(session, """
        WITH per_k AS (
          SELECT k, window_time AS ts, COUNT(*) AS c
          FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))
          GROUP BY k, window_start, window_end, window_time)
        SELECT window_start, window_end, SUM(c) AS total, MAX(c) AS most
        FROM TABLE(TUMBLE(TABLE per_k, DESCRIPTOR(ts), INTERVAL '10' SECOND))
        GROUP BY window_start, window_end""") == [
        (at(0), at(10), 5, 2), (at(10), at(20), 3, 1), (at(20), at(30), 1, 1)]


def test_window_tvf_over_an_interval_joins_rowtime(session) -> None:
    # pairs (click within the second before the order, same k): orders a@1, a@6, b@12
    assert _rows(session, """
        WITH pairs AS (
          SELECT o.ts, o.k FROM orders AS o JOIN clicks AS c
          ON o.k = c.k AND c.ts BETWEEN o.ts - INTERVAL '1' SECOND AND o.ts)
        SELECT window_start, window_end, COUNT(*) AS pairs
        FROM TABLE(TUMBLE(TABLE pairs, DESCRIPTOR(ts), INTERVAL '10' SECOND))
        GROUP BY window_start, window_end""") == [(at(0), at(10), 2), (at(10), at(20), 1)]
