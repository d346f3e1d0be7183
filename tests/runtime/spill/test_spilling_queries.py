"""ORDER BY, window functions and set operations as SQL over TPC-H SF 0.01 at a tiny memory
budget, at parallelism 1 and 2: the same rows as DuckDB (in the same order where the
query orders them fully), the spill directory empty after each statement."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import flowsql
from tests.harness.operators import assert_rows
from tests.harness.tpch import create_table_sql

QUERIES = {
    "order-by": ("SELECT l_orderkey, l_linenumber, l_comment, l_shipdate FROM lineitem "
                 "ORDER BY l_shipdate DESC, l_comment, l_orderkey, l_linenumber", True),
    "window": ("SELECT o_orderkey, o_custkey, "
               "row_number() OVER (PARTITION BY o_custkey ORDER BY o_orderdate, o_orderkey) "
               "AS n, count(*) OVER (PARTITION BY o_custkey) AS c, "
               "lag(o_orderkey) OVER (PARTITION BY o_custkey, o_orderstatus "
               "ORDER BY o_orderkey) AS prev FROM orders", False),
    "intersect": ("SELECT l_orderkey, l_suppkey FROM lineitem WHERE l_quantity < 30 "
                  "INTERSECT SELECT l_orderkey, l_suppkey FROM lineitem "
                  "WHERE l_discount > 0.04", False),
    "except-all": ("SELECT l_partkey, l_returnflag FROM lineitem EXCEPT ALL "
                   "SELECT l_partkey, l_returnflag FROM lineitem WHERE l_tax > 0.02", False),
    "union": ("SELECT l_suppkey, l_shipmode FROM lineitem UNION "
              "SELECT ps_suppkey, 'PART' FROM partsupp", False),
}


@pytest.fixture(scope="module")
def duck_tpch(tpch_dir: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    for name in ("lineitem", "orders", "partsupp"):
        con.sql(f"CREATE VIEW {name} AS SELECT * FROM '{tpch_dir / name}.parquet'")
    yield con
    con.close()


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("name", QUERIES)
def test_query_at_a_tiny_budget(name: str, parallelism: int, tpch_dir: Path,
                                duck_tpch: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    sql, ordered = QUERIES[name]
    session = flowsql.connect(**{"execution.memory-budget": "256kb",
                                 "io.tmp.dirs": str(tmp_path),
                                 "parallelism.default": str(parallelism),
                                 "optimizer.small-query-on-one-subtask": "false"})
    try:
        for table in ("lineitem", "orders", "partsupp"):
            session.sql(create_table_sql(table, tpch_dir))
        result = session.sql("EXPLAIN ANALYZE " + sql)
        assert result.analysis is not None
        assert sum(result.analysis.column("spilled_bytes").to_pylist()) > 0
        actual = session.sql(sql).to_arrow()
    finally:
        session.close()
    assert list(os.walk(tmp_path)) == [(str(tmp_path), [], [])]
    expected = duck_tpch.sql(sql).to_arrow_table()
    if ordered:
        assert actual.to_pylist() == expected.to_pylist()
    else:
        assert_rows(actual, expected)
