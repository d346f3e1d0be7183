"""Statistics from Parquet footers, without ANALYZE: exact null counts and min/max over
many row groups and files, compared with DuckDB reading the same files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import flowsql
from flowsql.planner.statistics import statistic_number


def _write(directory: Path) -> None:
    rng = np.random.default_rng(7)
    for part in range(2):
        n = 10_000
        table = pa.table({
            "k": pa.array(rng.integers(-500, 500, n), mask=rng.random(n) < 0.1),
            "d": pa.array(rng.integers(0, 20_000, n).astype(np.int32)).cast(pa.date32()),
            "p": pa.array(rng.random(n) * 1000).cast(pa.decimal128(10, 2), safe=False),
            "s": pa.array([f"s{i}" for i in rng.integers(0, 50, n)]),
            # a column NULL in a whole row group: that group records no extremes
            "late": pa.array([None] * 5_000 + [dt.datetime(2020, 1, 1 + part)] * 5_000,
                             pa.timestamp("us")),
        })
        pq.write_table(table, directory / f"p{part}.parquet", row_group_size=2_500)


def test_footers_give_nulls_and_extremes(tmp_path: Path) -> None:
    _write(tmp_path)
    assert pq.ParquetFile(tmp_path / "p0.parquet").metadata.num_row_groups == 4
    session = flowsql.connect()
    session.sql(f"CREATE TABLE t WITH ('connector' = 'filesystem', 'path' = '{tmp_path}', "
                "'format' = 'parquet')")
    entry = session.catalog.get("t")
    statistics = entry.statistics
    assert statistics.origin == "metadata" and statistics.row_count == 20_000
    assert statistics.fingerprint
    con = duckdb.connect()
    for field in entry.schema:
        nulls, low, high = con.execute(
            f"SELECT count(*) - count({field.name}), min({field.name}), max({field.name}) "
            f"FROM read_parquet('{tmp_path}/*.parquet')").fetchone()  # type: ignore[misc]
        figures = statistics.columns[field.name]
        assert figures.null_count == nulls, field.name
        assert figures.distinct_count is None and figures.histogram == ()
        if field.name == "s":
            assert (figures.min_value, figures.max_value) == (None, None)  # unordered
        else:
            assert (figures.min_value, figures.max_value) == (
                statistic_number(low, field.type), statistic_number(high, field.type))
    assert statistics.distinct_bounds["k"] == 1000  # still there


def test_csv_tables_know_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("1,a\n2,b\n")
    session = flowsql.connect()
    session.sql(f"CREATE TABLE c (x INT, y STRING) WITH ('connector' = 'filesystem', "
                f"'path' = '{path}', 'format' = 'csv')")
    statistics = session.catalog.get("c").statistics
    assert (statistics.origin, statistics.row_count, statistics.columns) == ("none", None, {})
    assert statistics.total_bytes == 8
