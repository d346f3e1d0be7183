"""Shared subplans on Spark: TPC-H Q15's view is one cached DataFrame read by both
references, and the answer is DuckDB's."""

from __future__ import annotations

from pathlib import Path

import duckdb

import flowsql
from flowsql.tpch.queries import load_query
from flowsql.tpch.verify import compare_tables
from tests.harness.spark import SPARK_TEST_SETTINGS
from tests.harness.tpch import TPCH_TABLES
from tests.optimizer.test_share_subplans import THREE_TIMES


def _session(tpch_dir: Path) -> flowsql.Session:
    session = flowsql.connect(engine="spark", **SPARK_TEST_SETTINGS)
    for name in TPCH_TABLES:
        session.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
    return session


def test_q15_view_is_cached_once_and_read_twice(
        tpch_dir: Path, duckdb_tpch: duckdb.DuckDBPyConnection) -> None:
    session = _session(tpch_dir)
    sql = load_query(15)
    program = session.sql("EXPLAIN PYSPARK " + sql).plan_text or ""
    assert program.count(".cache()") == 1
    assert program.count("lineitem.parquet") == 1
    cached = next(line.split("=")[0].strip() for line in program.splitlines()
                  if line.endswith(".cache()"))
    assert program.count(f"{cached}.") == 2  # the join's reference and the max's
    expected = duckdb_tpch.sql(sql).to_arrow_table()
    assert compare_tables(session.sql(sql).to_arrow(), expected, ordered=True) == []


def test_cte_used_three_times(tpch_dir: Path, duckdb_tpch: duckdb.DuckDBPyConnection) -> None:
    session = _session(tpch_dir)
    program = session.sql("EXPLAIN PYSPARK " + THREE_TIMES).plan_text or ""
    assert program.count(".cache()") == 1 and program.count("nation.parquet") == 1
    expected = duckdb_tpch.sql(THREE_TIMES).to_arrow_table()
    assert compare_tables(session.sql(THREE_TIMES).to_arrow(), expected, ordered=True) == []
