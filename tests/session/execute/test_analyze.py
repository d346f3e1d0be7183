"""ANALYZE TABLE end to end, checked against DuckDB's exact figures on Parquet files.

Exact: row count, null counts, min and max. Estimated: distinct counts (HyperLogLog,
within 3% on a column of ~120k distinct values, which is about 4 standard errors) and the
histogram (each of 64 buckets must hold within 25% of 1/64 of the rows, about 8 standard
errors of the 65,536-value sample; a column below the sample size is exact).
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import BindError, SqlSyntaxError
from flowsql.planner.statistics import statistic_number

ROWS_PER_FILE = 120_000
#: physical columns and their engine types
TYPES = {"id": pa.int64(), "k": pa.int64(), "s": pa.string(), "price": pa.decimal128(12, 2),
         "d": pa.date32(), "ts": pa.timestamp("us"), "x": pa.float64(), "flag": pa.bool_()}


def _file(seed: int) -> pa.Table:
    """Rows with nulls in most columns; ``k`` draws from 150k values (~120k distinct over
    both files), ``s`` has 5,000 distinct strings."""
    rng = np.random.default_rng(seed)
    n = ROWS_PER_FILE
    k = rng.integers(0, 150_000, n)
    nulls = rng.random(n) < 0.05
    price_cents = rng.integers(100, 10_000_000, n)
    columns = {
        "id": pa.array(np.arange(n) + seed * n),
        "k": pa.array(k),
        "s": pc.if_else(pa.array(nulls), pa.scalar(None, pa.string()),
                        pc.binary_join_element_wise("name-", pa.array(k % 5000).cast(pa.string()),
                                                    "")),
        "price": pa.array(price_cents / 100, mask=rng.random(n) < 0.02).cast(
            pa.decimal128(12, 2)),
        "d": pa.array(rng.integers(8000, 11000, n).astype(np.int32)).cast(pa.date32()),
        "ts": pa.array(rng.integers(0, 10**15, n), pa.int64()).cast(pa.timestamp("us")),
        "x": pa.array(rng.normal(100.0, 15.0, n), mask=rng.random(n) < 0.1),
        "flag": pa.array(rng.random(n) < 0.3),
    }
    return pa.table(columns)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("analyze") / "t"
    directory.mkdir()
    for seed in (1, 2):
        pq.write_table(_file(seed), directory / f"part-{seed}.parquet", row_group_size=25_000)
    return directory


def _session(path: Path) -> Any:
    session = flowsql.connect()
    session.sql(f"CREATE TABLE t WITH ('connector' = 'filesystem', 'path' = '{path}', "
                "'format' = 'parquet')")
    return session


def _one(sql: str) -> tuple[Any, ...]:
    """The one row DuckDB returns for ``sql``."""
    row = duckdb.connect().execute(sql).fetchone()
    assert row is not None
    return row


def _exact(path: Path, column: str) -> dict[str, Any]:
    """DuckDB's count, nulls, min, max and count(DISTINCT) of one column."""
    row = _one(f"SELECT count(*), count(*) - count({column}), min({column}), "
               f"max({column}), count(DISTINCT {column}) FROM read_parquet('{path}/*.parquet')")
    return dict(zip(("rows", "nulls", "min", "max", "distinct"), row))


@pytest.fixture(scope="module")
def analyzed(data_dir: Path) -> tuple[Any, pa.Table]:
    session = _session(data_dir)
    report = session.sql("ANALYZE TABLE t COMPUTE STATISTICS FOR ALL COLUMNS").to_arrow()
    return session, report


def test_counts_and_extremes_are_exact(data_dir: Path, analyzed: tuple[Any, pa.Table]) -> None:
    session, report = analyzed
    statistics = session.catalog.get("t").statistics
    assert statistics.origin == "analyzed"
    assert report.column("column").to_pylist() == list(TYPES)
    for name, dtype in TYPES.items():
        exact = _exact(data_dir, name)
        figures = statistics.columns[name]
        assert statistics.row_count == exact["rows"] == 2 * ROWS_PER_FILE
        assert figures.null_count == exact["nulls"], name
        assert figures.min_value == statistic_number(exact["min"], dtype), name
        assert figures.max_value == statistic_number(exact["max"], dtype), name
    rows = {r["column"]: r for r in report.to_pylist()}
    assert rows["d"]["min"] == str(_exact(data_dir, "d")["min"])
    assert rows["s"]["min"] == _exact(data_dir, "s")["min"]  # strings: shown, not stored
    assert statistics.columns["s"].min_value is None


def test_distinct_counts_are_close(data_dir: Path, analyzed: tuple[Any, pa.Table]) -> None:
    session, _ = analyzed
    statistics = session.catalog.get("t").statistics
    for name in TYPES:
        exact = _exact(data_dir, name)["distinct"]
        estimate = statistics.columns[name].distinct_count
        assert estimate is not None
        assert abs(estimate - exact) <= 0.03 * exact, (name, estimate, exact)
    assert 100_000 < _exact(data_dir, "k")["distinct"] < 150_000  # the column it is about
    assert statistics.columns["flag"].distinct_count == 2


@pytest.mark.parametrize("name", ["k", "d", "x", "id"])
def test_histogram_buckets_hold_equal_shares(data_dir: Path, analyzed: tuple[Any, pa.Table],
                                             name: str) -> None:
    session, _ = analyzed
    figures = session.catalog.get("t").statistics.columns[name]
    bounds = np.array(figures.histogram)
    assert len(bounds) == 65
    assert bounds[0] == figures.min_value and bounds[-1] == figures.max_value
    assert np.all(np.diff(bounds) >= 0)
    column = pq.read_table(data_dir, columns=[name]).column(name)
    from flowsql.runtime.statistics.numeric_form import numeric_values

    values = numeric_values(column.combine_chunks())
    counts = np.histogram(values, bins=bounds)[0]
    expected = len(values) / 64
    assert np.all(np.abs(counts - expected) <= 0.25 * expected), counts


def test_strings_have_no_histogram_and_average_width(data_dir: Path,
                                                     analyzed: tuple[Any, pa.Table]) -> None:
    session, _ = analyzed
    figures = session.catalog.get("t").statistics.columns["s"]
    assert figures.histogram == ()
    width = _one(f"SELECT avg(strlen(s)) FROM read_parquet('{data_dir}/*.parquet')")
    assert figures.avg_width == pytest.approx(width[0])
    assert session.catalog.get("t").statistics.columns["id"].avg_width == 8.0


def test_tpch_lineitem_matches_duckdb(tpch_dir: Path) -> None:
    session = flowsql.connect()
    path = tpch_dir / "lineitem.parquet"
    session.sql(f"CREATE TABLE lineitem WITH ('connector' = 'filesystem', 'path' = '{path}', "
                "'format' = 'parquet')")
    session.sql("ANALYZE TABLE lineitem")
    entry = session.catalog.get("lineitem")
    for field in entry.schema:
        row = _one(f"SELECT count(*) - count({field.name}), min({field.name}), "
                   f"max({field.name}), count(DISTINCT {field.name}) FROM read_parquet('{path}')")
        figures = entry.statistics.columns[field.name]
        assert figures.null_count == row[0]
        if figures.min_value is not None or figures.max_value is not None:
            assert (figures.min_value, figures.max_value) == (
                statistic_number(row[1], field.type), statistic_number(row[2], field.type))
        assert figures.distinct_count is not None
        assert abs(figures.distinct_count - row[3]) <= max(0.03 * row[3], 1), field.name
    assert entry.statistics.row_count == _one(f"SELECT count(*) FROM read_parquet('{path}')")[0]


def test_for_columns_measures_only_those_and_keeps_footer_figures(data_dir: Path) -> None:
    session = _session(data_dir)
    report = session.sql("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS K, s, k").to_arrow()
    assert report.column("column").to_pylist() == ["k", "s"]
    statistics = session.catalog.get("t").statistics
    assert statistics.origin == "analyzed"
    assert statistics.columns["k"].distinct_count is not None
    assert statistics.columns["x"].distinct_count is None  # from the footers only
    assert statistics.columns["x"].null_count == _exact(data_dir, "x")["nulls"]
    session.sql("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS x")
    merged = session.catalog.get("t").statistics
    assert merged.columns["k"] == statistics.columns["k"]  # same files: kept
    assert merged.columns["x"].distinct_count is not None


def test_noscan_counts_rows_only(data_dir: Path, tmp_path: Path) -> None:
    session = _session(data_dir)
    report = session.sql("ANALYZE TABLE t COMPUTE STATISTICS NOSCAN").to_arrow()
    assert report.to_pylist()[0]["row_count"] == 2 * ROWS_PER_FILE
    assert report.num_rows == 1 and report.column("column").to_pylist() == [None]
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,x\n2,\n3,y\n")
    session.sql(f"CREATE TABLE c (a INT, b STRING) WITH ('connector' = 'filesystem', "
                f"'path' = '{csv}', 'format' = 'csv', 'csv.ignore-first-line' = 'true')")
    assert session.catalog.get("c").statistics.origin == "none"
    session.sql("ANALYZE TABLE c COMPUTE STATISTICS NOSCAN")
    assert session.catalog.get("c").statistics.row_count == 3
    rows = session.sql("ANALYZE TABLE c").to_arrow().to_pylist()
    assert [(r["column"], r["null_count"], r["distinct_count"], r["min"], r["max"])
            for r in rows] == [("a", 0, 3, "1", "3"), ("b", 0, 3, "", "y")]


def _explain_scan(session: Any, sql: str) -> str:
    text = session.sql(f"EXPLAIN {sql}").explain()
    return next(line.strip() for line in text.splitlines() if "TableScan" in line)


def test_adding_a_file_invalidates_analyzed_statistics(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    directory.mkdir()
    pq.write_table(_file(1).slice(0, 1000), directory / "a.parquet")
    session = _session(directory)
    assert session.catalog.get("t").statistics.origin == "metadata"
    session.sql("ANALYZE TABLE t")
    assert "stats=analyzed rows=~1000" in _explain_scan(session, "SELECT k FROM t")
    # unchanged files: the analyzed figures stay
    assert session.sql("SELECT count(*) AS n FROM t").to_arrow().to_pylist() == [{"n": 1000}]
    assert session.catalog.get("t").statistics.origin == "analyzed"
    pq.write_table(_file(2).slice(0, 500), directory / "b.parquet")
    assert session.sql("SELECT count(*) AS n FROM t").to_arrow().to_pylist() == [{"n": 1500}]
    statistics = session.catalog.get("t").statistics
    assert (statistics.origin, statistics.row_count) == ("metadata", 1500)
    assert statistics.columns["k"].distinct_count is None
    assert "stats=metadata rows=~1500" in _explain_scan(session, "SELECT k FROM t")


def test_rewriting_a_file_invalidates_through_a_view(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    directory.mkdir()
    target = directory / "a.parquet"
    pq.write_table(_file(1).slice(0, 1000), target)
    session = _session(directory)
    session.sql("CREATE VIEW v AS SELECT k FROM t")
    session.sql("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS k")
    stamp = os.stat(target).st_mtime_ns
    pq.write_table(_file(1).slice(0, 1000), target)  # same size, new time
    os.utime(target, ns=(stamp + 10**9, stamp + 10**9))
    session.sql("SELECT * FROM v").to_arrow()
    assert session.catalog.get("t").statistics.origin == "metadata"


def test_describe_extended_shows_statistics(data_dir: Path,
                                            analyzed: tuple[Any, pa.Table]) -> None:
    session, _ = analyzed
    table = session.sql("DESCRIBE TABLE EXTENDED t").to_arrow()
    rows = {r["name"]: r for r in table.to_pylist()}
    exact = _exact(data_dir, "d")
    assert (rows["d"]["null_count"], rows["d"]["min"], rows["d"]["max"]) == (
        exact["nulls"], str(exact["min"]), str(exact["max"]))
    assert rows["k"]["histogram_buckets"] == 64
    assert rows["# statistics"]["type"] == "analyzed"
    assert rows["# row_count"]["type"] == str(2 * ROWS_PER_FILE)
    assert session.sql("DESCRIBE t").to_arrow().column_names == ["name", "type", "null"]
    plain = _session(data_dir).sql("DESC EXTENDED t").to_arrow().to_pylist()
    assert plain[-3]["type"] == "metadata"


# -- errors ------------------------------------------------------------------------------------

def _error(session: Any, sql: str) -> BindError:
    with pytest.raises(BindError) as caught:
        session.sql(sql)
    return caught.value


def test_unknown_table_and_column_point_at_the_name(data_dir: Path) -> None:
    session = _session(data_dir)
    error = _error(session, "ANALYZE TABLE tt")
    assert (error.line, error.col) == (1, 15)
    assert "table 'tt' not found; did you mean 't'?" in str(error)
    error = _error(session, "ANALYZE TABLE t\n  COMPUTE STATISTICS FOR COLUMNS k, prise")
    assert (error.line, error.col) == (2, 37)
    assert "column 'prise' not found in table 't'; did you mean 'price'?" in str(error)


def test_views_computed_columns_and_unbounded_tables_are_refused(data_dir: Path,
                                                                 tmp_path: Path) -> None:
    session = _session(data_dir)
    session.sql("CREATE VIEW v AS SELECT k FROM t")
    assert "'v' is a view" in str(_error(session, "ANALYZE TABLE v"))
    csv = tmp_path / "c.csv"
    csv.write_text("1\n")
    session.sql(f"CREATE TABLE c (a INT, b AS a + 1) WITH ('connector' = 'filesystem', "
                f"'path' = '{csv}', 'format' = 'csv')")
    assert "computed when read" in str(_error(session, "ANALYZE TABLE c COMPUTE STATISTICS "
                                                       "FOR COLUMNS b"))
    session.sql("CREATE TABLE g (v BIGINT) WITH ('connector' = 'datagen')")
    session.sql("CREATE TABLE s (v STRING) WITH ('connector' = 'socket', 'hostname' = "
                "'127.0.0.1', 'port' = '9', 'format' = 'raw')")
    session.sql(f"CREATE TABLE w (a INT) WITH ('connector' = 'filesystem', 'path' = "
                f"'{tmp_path}', 'format' = 'csv', 'source.monitor-interval' = '1 s')")
    for name, kind in (("g", "a datagen table"), ("s", "a socket table"),
                       ("w", "a watched (unbounded) directory")):
        error = _error(session, f"ANALYZE TABLE {name}")
        assert "ANALYZE TABLE needs a bounded table" in str(error) and kind in str(error)
        assert (error.line, error.col) == (1, 15)


def test_syntax_errors_show_the_form(data_dir: Path) -> None:
    session = _session(data_dir)
    with pytest.raises(SqlSyntaxError, match="expected COMPUTE STATISTICS") as caught:
        session.sql("ANALYZE TABLE t STATISTICS")
    assert (caught.value.line, caught.value.col) == (1, 17)


def test_analyze_is_quick_on_small_tables(tmp_path: Path) -> None:
    """A guard against a per-row Python loop: 240k rows in a few seconds at most."""
    directory = tmp_path / "t"
    directory.mkdir()
    pq.write_table(_file(3), directory / "a.parquet")
    pq.write_table(_file(4), directory / "b.parquet")
    session = _session(directory)
    start = time.perf_counter()
    session.sql("ANALYZE TABLE t")
    assert time.perf_counter() - start < 30


def test_dates_and_decimals_round_trip_the_numeric_form() -> None:
    assert statistic_number(dt.date(1970, 1, 11), pa.date32()) == 10.0
    assert statistic_number(decimal.Decimal("1.25"), pa.decimal128(4, 2)) == 1.25
