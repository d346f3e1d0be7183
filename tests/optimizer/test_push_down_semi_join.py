"""The semi join of an IN / EXISTS subquery goes below the inner joins under it, onto the
input its keys come from, where that is cheaper (TPC-H SF 0.01, footer statistics); the
results equal DuckDB's wherever it stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from flowsql.tpch.queries import load_query
from flowsql.tpch.verify import compare_tables, is_ordered_query
from tests.harness.tpch import TPCH_TABLES, create_table_sql

# TPC-H Q18's shape: the orders with a large total quantity, joined with all their lines
LARGE_ORDERS = ("SELECT o_orderkey, c_name, sum(l_quantity) AS q FROM customer, orders, "
                "lineitem WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem "
                "GROUP BY l_orderkey HAVING sum(l_quantity) > 250) "
                "AND c_custkey = o_custkey AND o_orderkey = l_orderkey "
                "GROUP BY o_orderkey, c_name ORDER BY o_orderkey")
# EXISTS on the customer side of a join with every order: the semi join goes to customer
CUSTOMERS_WITH_SUPPLIER_NATION = (
    "SELECT c_custkey, o_orderkey FROM customer, orders WHERE c_custkey = o_custkey "
    "AND EXISTS (SELECT 1 FROM supplier WHERE s_nationkey = c_nationkey "
    "AND s_acctbal > 9000) ORDER BY c_custkey, o_orderkey")
# the semi join's key spans both sides of the join below: it cannot move
BOTH_SIDES = ("SELECT o_orderkey, l_linenumber FROM orders, lineitem "
              "WHERE o_orderkey = l_orderkey AND EXISTS (SELECT 1 FROM partsupp "
              "WHERE ps_partkey = l_partkey AND ps_suppkey = o_custkey) "
              "ORDER BY o_orderkey, l_linenumber")
# below a LEFT join's null-supplying side the kept rows would differ: it stays above
LEFT_JOIN = ("SELECT c_custkey, o_orderkey FROM customer LEFT JOIN orders "
             "ON c_custkey = o_custkey WHERE o_orderkey IN (SELECT l_orderkey FROM lineitem "
             "WHERE l_quantity > 49) ORDER BY c_custkey, o_orderkey")


@pytest.fixture(scope="module")
def engines(tpch_dir: Path) -> Any:
    import flowsql

    session = flowsql.connect()
    con = duckdb.connect()
    for name in TPCH_TABLES:
        session.sql(create_table_sql(name, tpch_dir))
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM "
                    f"read_parquet('{tpch_dir / (name + '.parquet')}')")
    yield session, con
    session.close()
    con.close()


def optimized_lines(session: Any, sql: str) -> list[str]:
    lines = [r["plan"] for r in session.sql("EXPLAIN " + sql).to_arrow().to_pylist()]
    return lines[lines.index("== Optimized Logical Plan ==") + 1:
                 lines.index("== Physical Plan ==")]


def semi_join_input(lines: list[str]) -> str:
    """The first line of the semi join's left input (the line after ``Join[semi]``)."""
    at = next(i for i, line in enumerate(lines) if "Join[semi]" in line)
    return lines[at + 1].strip()


def assert_equal_to_duckdb(engines: Any, sql: str) -> None:
    session, con = engines
    expected = con.sql(sql).to_arrow_table()
    actual = session.sql(sql).to_arrow()
    assert actual.num_rows > 0
    differences = compare_tables(actual, expected, ordered=is_ordered_query(sql))
    assert differences == [], "\n".join(differences[:20])


@pytest.mark.parametrize("sql, lands_on", [
    (LARGE_ORDERS, "Scan orders"),
    (CUSTOMERS_WITH_SUPPLIER_NATION, "Scan customer"),
])
def test_semi_join_lands_on_the_input_of_its_keys(engines: Any, sql: str,
                                                  lands_on: str) -> None:
    assert semi_join_input(optimized_lines(engines[0], sql)).startswith(lands_on)
    assert_equal_to_duckdb(engines, sql)


@pytest.mark.parametrize("sql", [BOTH_SIDES, LEFT_JOIN])
def test_semi_join_stays_above_a_join_it_cannot_pass(engines: Any, sql: str) -> None:
    assert semi_join_input(optimized_lines(engines[0], sql)).startswith("Join[")
    assert_equal_to_duckdb(engines, sql)


def test_disabled_rule_leaves_the_semi_join_above(engines: Any) -> None:
    session = engines[0]
    session.sql("SET 'optimizer.disable-rules' = 'push_down_semi_join'")
    try:
        assert semi_join_input(optimized_lines(session, LARGE_ORDERS)).startswith("Join[")
    finally:
        session.sql("RESET 'optimizer.disable-rules'")
    assert_equal_to_duckdb(engines, LARGE_ORDERS)


def test_it_stays_above_a_join_that_keeps_few_rows(engines: Any) -> None:
    """Q21: lineitem l1 joined with one nation's suppliers and the 'F' orders keeps far
    fewer rows than l1 has, so EXISTS is checked after those joins."""
    lines = optimized_lines(engines[0], load_query(21))
    assert semi_join_input(lines).startswith("Join[inner]")
