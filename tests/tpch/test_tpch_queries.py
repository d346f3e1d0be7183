"""The 22 query texts ship with the package, parse as plain SQL, and run on DuckDB with the
row counts hand-checked against DuckDB's published TPC-H answers at SF 0.01 (the text columns
of tpchgen-cli differ from dbgen's, which changes Q13's counts but no other row count)."""

from __future__ import annotations

from importlib import resources

import duckdb
import pytest
import sqlglot

from flowsql.errors import FlowSQLError
from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from flowsql.tpch.verify import is_ordered_query

EXPECTED_ROWS_SF001 = {1: 4, 2: 4, 3: 10, 4: 5, 5: 5, 6: 1, 7: 4, 8: 2, 9: 173, 10: 20, 11: 359,
                       12: 2, 13: 33, 14: 1, 15: 1, 16: 296, 17: 1, 18: 2, 19: 1, 20: 1,
                       21: 1, 22: 7}
UNORDERED = {6, 14, 17, 19}  # single-row aggregates without ORDER BY


def test_the_package_ships_exactly_the_22_query_files_and_each_loads() -> None:
    """Reads the package's data directory, not QUERY_NUMBERS: a missing, extra or misnamed
    query file fails here, and so does a QUERY_NUMBERS that disagrees with the files."""
    shipped = sorted(entry.name for entry in resources.files("flowsql.tpch").joinpath(
        "queries").iterdir() if entry.name.endswith(".sql"))
    assert shipped == [f"q{n:02d}.sql" for n in range(1, 23)]
    assert tuple(int(name[1:3]) for name in shipped) == QUERY_NUMBERS
    texts = {n: load_query(n) for n in QUERY_NUMBERS}
    # each file's header names its own query, so two swapped files fail too
    assert [n for n, text in texts.items() if not text.startswith(f"-- TPC-H Q{n}:")] == []
    assert len(set(texts.values())) == 22


@pytest.mark.parametrize("number", QUERY_NUMBERS)
def test_query_text_is_one_plain_select(number: int) -> None:
    sql = load_query(number)
    assert not sql.rstrip().endswith(";")
    statements = sqlglot.parse(sql)
    assert len(statements) == 1
    assert isinstance(statements[0], sqlglot.exp.Select)
    assert is_ordered_query(sql) is (number not in UNORDERED)


def test_q15_uses_a_with_clause_instead_of_a_view() -> None:
    sql = load_query(15).lower()
    assert "create view" not in sql
    assert "with revenue0 as" in sql


def test_unknown_query_number_is_a_clear_error() -> None:
    with pytest.raises(FlowSQLError, match="no TPC-H query 23"):
        load_query(23)


def test_queries_run_on_duckdb_with_the_reference_row_counts(
        duckdb_tpch: duckdb.DuckDBPyConnection) -> None:
    counts = {n: duckdb_tpch.sql(load_query(n)).to_arrow_table().num_rows
              for n in QUERY_NUMBERS}
    assert counts == EXPECTED_ROWS_SF001


def test_q1_first_group_matches_the_reference_answer(
        duckdb_tpch: duckdb.DuckDBPyConnection) -> None:
    first = duckdb_tpch.sql(load_query(1)).to_arrow_table().to_pylist()[0]
    assert (first["l_returnflag"], first["l_linestatus"]) == ("A", "F")
    assert str(first["sum_qty"]) == "380456.00"
    assert str(first["sum_base_price"]) == "532348211.65"
    assert str(first["sum_charge"]) == "526165934.000839"
    assert first["count_order"] == 14876
