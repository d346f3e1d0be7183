"""TableStatistics survive being written out as JSON and read back, figure for figure."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.planner.statistics import ColumnStatistics, TableStatistics
from flowsql.planner.statistics_json import statistics_from_json, statistics_to_json


def test_every_field_round_trips() -> None:
    statistics = TableStatistics(
        row_count=6_001_215, total_bytes=123_456, distinct_bounds={"k": 25},
        columns={"k": ColumnStatistics(0, 25, 0.0, 24.0, (0.0, 12.5, 24.0), 8.0),
                 "s": ColumnStatistics(null_count=3, distinct_count=7, avg_width=4.25),
                 "empty": ColumnStatistics()},
        origin="analyzed", fingerprint="00ff")
    text = statistics_to_json(statistics)
    assert statistics_from_json(text) == statistics
    assert json.loads(text)["columns"]["k"]["histogram"] == [0.0, 12.5, 24.0]
    assert statistics_from_json(statistics_to_json(TableStatistics())) == TableStatistics()


def test_analyzed_statistics_of_a_table_round_trip(tmp_path: Path) -> None:
    import pyarrow as pa

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2, None, 4], "d": pa.array([0.1, 0.2, 0.3, None])}), path)
    session = flowsql.connect()
    session.sql(f"CREATE TABLE t WITH ('connector' = 'filesystem', 'path' = '{path}', "
                "'format' = 'parquet')")
    session.sql("ANALYZE TABLE t")
    statistics = session.catalog.get("t").statistics
    assert statistics.columns["a"].histogram  # something worth writing
    assert statistics_from_json(statistics_to_json(statistics)) == statistics


def test_another_layout_is_refused() -> None:
    with pytest.raises(ValueError, match="layout version"):
        statistics_from_json('{"version": 99}')
