"""All 22 TPC-H queries on the local engine at SF 0.01 give DuckDB's answer on the same files."""

from __future__ import annotations

import duckdb
import pytest

import flowsql
from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from flowsql.tpch.verify import compare_tables, is_ordered_query


@pytest.mark.parametrize("number", QUERY_NUMBERS, ids=[f"q{n:02d}" for n in QUERY_NUMBERS])
def test_local_engine_matches_duckdb(number: int, tpch_session: flowsql.Session,
                                     duckdb_tpch: duckdb.DuckDBPyConnection) -> None:
    sql = load_query(number)
    expected = duckdb_tpch.sql(sql).to_arrow_table()
    actual = tpch_session.sql(sql).to_arrow()
    differences = compare_tables(actual, expected, ordered=is_ordered_query(sql))
    assert not differences, f"Q{number} differs from DuckDB:\n" + "\n".join(differences)
