"""Keyed state size per operator in a streaming job's metrics (``state_rows``,
``state_bytes``), without TTL: every stateful operator reports it, operators without keyed
state do not, and the row counts are the hand-counted rows each operator must keep."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql

EPOCH = dt.datetime(2024, 1, 1)


@pytest.fixture()
def session(tmp_path: Path) -> flowsql.Session:
    rows = {"l": [("a", 1, 1), ("b", 2, 4), ("a", 3, 11), ("c", 4, 13), ("a", 5, 21)],
            "r": [("a", 10, 2), ("a", 20, 12), ("b", 30, 14)]}
    s = flowsql.connect(**{"execution.runtime-mode": "streaming",
                           "pipeline.auto-watermark-interval": "0"})
    for name, data in rows.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table({
            "k": [r[0] for r in data], "v": pa.array([r[1] for r in data], pa.int64()),
            "ts": pa.array([EPOCH + dt.timedelta(seconds=r[2]) for r in data],
                           pa.timestamp("ms"))}), path)
        s.sql(f"""CREATE TABLE {name} (k STRING, v BIGINT, ts TIMESTAMP(3),
                    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
                  WITH ('connector' = 'filesystem', 'path' = '{path}')""")
    yield s
    s.close()


def _metrics(session: flowsql.Session, query: str) -> dict[str, dict[str, Any]]:
    """Per operator (by its node name) the metrics after the bounded query ran out."""
    result = session.sql(query)
    result.to_arrow()
    run = result.changelog.run
    return {m["operator"].split(" ")[0]: m for m in run.metrics()}


def test_stateful_operators_report_their_keyed_state(session: flowsql.Session) -> None:
    # GROUP BY k: one group row each for a, b, c
    metrics = _metrics(session, "SELECT k, COUNT(*), SUM(v) FROM l GROUP BY k")
    group = next(m for name, m in metrics.items() if name.startswith("GroupAggregate"))
    assert group["state_rows"] == 3 and group["state_bytes"] > 0
    scans = [m for name, m in metrics.items() if name.startswith("TableScan")]
    assert scans and all("state_rows" not in m for m in scans)

    # a regular join stores every distinct row of both sides: 5 left + 3 right
    metrics = _metrics(session, "SELECT l.k, l.v, r.v FROM l JOIN r ON l.k = r.k")
    join = next(m for name, m in metrics.items() if name.startswith("StreamJoin"))
    assert join["state_rows"] == 8 and join["state_bytes"] > 0

    # Top-2 per k keeps at most two rows of each key: a (2 of 3), b, c
    metrics = _metrics(session, """SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER
                                     (PARTITION BY k ORDER BY v DESC) AS rn FROM l)
                                   WHERE rn <= 2""")
    rank = next(m for name, m in metrics.items() if name.startswith("Rank"))
    assert rank["state_rows"] == 4 and rank["state_bytes"] > 0

    # a window aggregate holds nothing once every window fired at the end of the input
    metrics = _metrics(session, """SELECT k, window_start, COUNT(*) FROM TABLE(TUMBLE(
                                     TABLE l, DESCRIPTOR(ts), INTERVAL '10' SECOND))
                                   GROUP BY k, window_start, window_end""")
    window = next(m for name, m in metrics.items() if "Window" in name
                  and "state_rows" in m)
    assert window["state_rows"] == 0


def test_parallel_subtasks_add_up(session: flowsql.Session) -> None:
    session.sql("SET 'parallelism.default' = '2'")
    metrics = _metrics(session, "SELECT k, COUNT(*), SUM(v) FROM l GROUP BY k")
    group = next(m for name, m in metrics.items() if name.startswith("GroupAggregate"))
    assert group["subtasks"] == 2
    assert group["state_rows"] == 3 and group["state_bytes"] > 0
