"""The costed choice between pull-up and the domain join, on TPC-H at SF 0.01 after
ANALYZE TABLE: each form wins where the estimates say it is cheaper, EXPLAIN VERBOSE names
the decision, and the results equal DuckDB's either way.

* Pull-up wins when the outer query meets most of the subquery's groups: every part is
  compared with the average supply cost of its own suppliers, so the domain would be all
  part keys, computed from a second read of part, for nothing.
* The domain wins when a filter on another table leaves few outer values and the subquery
  joins further tables: the orders of one customer (no filter on orders itself, so the
  semi-join reduction of a pulled-up aggregate has nothing to reduce by) need the lines of
  a handful of orders joined with partsupp, not every line's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from flowsql.tpch.verify import compare_tables, is_ordered_query
from tests.harness.tpch import TPCH_TABLES, create_table_sql

PULL_UP_WINS = ("SELECT p_partkey, p_retailprice FROM part WHERE p_retailprice > "
                "(SELECT avg(ps_supplycost) FROM partsupp WHERE ps_partkey = p_partkey) "
                "ORDER BY p_partkey")
# one customer's orders, each compared with the supply cost of its own lines
DOMAIN_WINS = ("SELECT o_orderkey, o_totalprice FROM orders, customer "
               "WHERE o_custkey = c_custkey AND c_name = 'Customer#000000010' "
               "AND o_totalprice > (SELECT 10 * sum(ps_supplycost) FROM lineitem, partsupp "
               "WHERE l_orderkey = o_orderkey AND ps_partkey = l_partkey "
               "AND ps_suppkey = l_suppkey) ORDER BY o_orderkey")
# the same without the filter on customer: every order's sum is needed
PULL_UP_WINS_WITHOUT_FILTER = (
    "SELECT o_orderkey, o_totalprice FROM orders, customer "
    "WHERE o_custkey = c_custkey AND o_totalprice > (SELECT 10 * sum(ps_supplycost) "
    "FROM lineitem, partsupp WHERE l_orderkey = o_orderkey AND ps_partkey = l_partkey "
    "AND ps_suppkey = l_suppkey) ORDER BY o_orderkey")
EXISTS_DOMAIN_WINS = ("SELECT o_orderkey FROM orders, customer WHERE o_custkey = c_custkey "
                      "AND c_name = 'Customer#000000010' AND EXISTS (SELECT 1 "
                      "FROM lineitem, partsupp WHERE l_orderkey = o_orderkey "
                      "AND ps_partkey = l_partkey AND ps_suppkey = l_suppkey "
                      "AND ps_availqty < 100 * l_quantity) ORDER BY o_orderkey")


@pytest.fixture(scope="module")
def engines(tpch_dir: Path) -> Any:
    import flowsql

    session = flowsql.connect()
    con = duckdb.connect()
    for name in TPCH_TABLES:
        session.sql(create_table_sql(name, tpch_dir))
        session.sql(f"ANALYZE TABLE {name}")
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM "
                    f"read_parquet('{tpch_dir / (name + '.parquet')}')")
    yield session, con
    session.close()
    con.close()


def decisions(session: Any, sql: str) -> list[str]:
    lines = [r["plan"] for r in session.sql("EXPLAIN VERBOSE " + sql).to_arrow().to_pylist()]
    start = lines.index("== Costed Rewrite Decisions ==")
    return [line for line in lines[start + 1:] if line.startswith("decorrelate_subqueries")]




def optimized_text(session: Any, sql: str) -> str:
    lines = [r["plan"] for r in session.sql("EXPLAIN " + sql).to_arrow().to_pylist()]
    start = lines.index("== Optimized Logical Plan ==")
    end = lines.index("== Physical Plan ==")
    return "\n".join(lines[start + 1:end])


def distinct_without_aggregates(text: str) -> bool:
    """Whether the plan text has an Aggregate with no aggregate functions (a domain)."""
    return any("Aggregate groups=" in line and "aggs=[]" in line for line in text.split("\n"))


@pytest.mark.parametrize("sql, method", [
    (PULL_UP_WINS, "pull-up"),
    (PULL_UP_WINS_WITHOUT_FILTER, "pull-up"),
    (DOMAIN_WINS, "domain join"),
    (EXISTS_DOMAIN_WINS, "domain join"),
])
def test_cheaper_form_is_chosen_and_results_equal_duckdb(engines: Any, sql: str,
                                                         method: str) -> None:
    session, con = engines
    (decision,) = decisions(session, sql)
    assert f" by {method} (cost " in decision, decision
    pull_cost, domain_cost = (float(x.split(" by ")[0]) for x in
                              decision.split("(cost ")[1].rstrip(")").split(", "))
    assert (domain_cost < pull_cost) == (method == "domain join")
    assert distinct_without_aggregates(optimized_text(session, sql)) == \
        (method == "domain join")
    expected = con.sql(sql).to_arrow_table()
    actual = session.sql(sql).to_arrow()
    assert actual.num_rows > 0
    differences = compare_tables(actual, expected, ordered=is_ordered_query(sql))
    assert differences == [], "\n".join(differences[:20])
