"""Plans with sort-merge joins and sort aggregates run end to end through the session, on
one subtask and on two: the planned query's hash joins and hash aggregates are swapped for
their sort-based twins (``tests.harness.merge_plans``) and the results must equal the hash
plan's and DuckDB's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import flowsql
from flowsql.errors import PlanError
from flowsql.optimizer.sanity_check import sanity_check
from flowsql.optimizer.sanity_check.ordering import check_ordering
from flowsql.planner.explain import explain_physical
from flowsql.planner.physical import (
    ExchangeExec,
    HashJoinExec,
    PhysicalPlan,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
)
from flowsql.runtime.registry import describe
from flowsql.session import Session
from flowsql.session.execute.planning import plan_query
from flowsql.session.execute.query import run_physical
from flowsql.sql.statement_parser import parse_one
from flowsql.tpch.queries import load_query
from tests.harness.merge_plans import count_nodes, merge_plan, sorted_on
from tests.harness.operators import assert_rows
from tests.harness.tpch import TPCH_TABLES

QUERIES = {
    "inner": "SELECT c_custkey, c_name, o_orderkey, o_totalprice FROM customer "
             "JOIN orders ON c_custkey = o_custkey",
    "left_residual": "SELECT c_custkey, c_mktsegment, o_orderkey FROM customer LEFT JOIN orders "
                     "ON c_custkey = o_custkey AND o_totalprice > 200000",
    "right": "SELECT c_name, o_orderkey FROM customer RIGHT JOIN orders "
             "ON c_custkey = o_custkey AND c_acctbal > 0",
    "full_string_keys": "SELECT n.n_name, s.s_name FROM nation n FULL JOIN "
                        "(SELECT s_name, substr(s_name, 1, 0) || n_name AS nm, s_acctbal "
                        "FROM supplier JOIN nation ON s_nationkey = n_nationkey "
                        "WHERE s_acctbal > 5000) s ON n.n_name = s.nm",
    "two_keys": "SELECT l_orderkey, l_linenumber, ps_availqty FROM lineitem JOIN partsupp "
                "ON l_partkey = ps_partkey AND l_suppkey = ps_suppkey WHERE l_quantity < 5",
    "semi": "SELECT c_custkey FROM customer WHERE EXISTS (SELECT 1 FROM orders "
            "WHERE o_custkey = c_custkey AND o_orderstatus = 'F')",
    "anti": "SELECT c_custkey, c_name FROM customer WHERE NOT EXISTS (SELECT 1 FROM orders "
            "WHERE o_custkey = c_custkey AND o_totalprice > c_acctbal * 10)",
    "aggregate": "SELECT o_custkey, o_orderstatus, count(*), sum(o_totalprice), "
                 "count(DISTINCT o_orderpriority), min(o_orderdate) FILTER (WHERE o_totalprice "
                 "> 100000) FROM orders GROUP BY o_custkey, o_orderstatus",
    "global_aggregate": "SELECT count(*), avg(l_extendedprice) FROM lineitem",
    "q3": load_query(3),
    "q10": load_query(10),
    "q13": load_query(13),
    "q18": load_query(18),
    "q21": load_query(21),
}


@pytest.fixture(scope="module", params=[1, 2], ids=["parallelism1", "parallelism2"])
def session(request: pytest.FixtureRequest, tpch_dir: Path) -> Iterator[Session]:
    s = flowsql.connect(parallelism=request.param)
    for name in TPCH_TABLES:
        s.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
    yield s
    s.close()


def _plan(session: Session, sql: str) -> PhysicalPlan:
    _, _, plan = plan_query(session, parse_one(sql))  # type: ignore[arg-type]
    return plan  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", list(QUERIES))
def test_sort_based_plan_gives_the_hash_plans_rows(session: Session, duckdb_tpch,  # type: ignore[no-untyped-def]
                                                   name: str) -> None:
    sql = QUERIES[name]
    hashed = _plan(session, sql)
    merged = merge_plan(hashed)
    assert count_nodes(merged, SortMergeJoinExec) + count_nodes(merged, SortAggregateExec) > 0
    sanity_check(merged, session.settings, streaming=False)
    expected = run_physical(session, hashed)
    actual = run_physical(session, merged)
    assert actual.schema.names == expected.schema.names
    assert_rows(actual, expected)
    if not name.startswith("q"):
        assert_rows(actual, duckdb_tpch.sql(sql).to_arrow_table())


def _sorts_below_exchanges(plan: PhysicalPlan) -> PhysicalPlan:
    """The merge plan with each join's sorts placed below its inputs' exchanges."""
    plan = plan.with_inputs(tuple(_sorts_below_exchanges(c) for c in plan.inputs))
    if not isinstance(plan, SortMergeJoinExec):
        return plan
    sides = []
    for side, keys in ((plan.left, plan.left_keys), (plan.right, plan.right_keys)):
        assert isinstance(side, SortExec)
        exchange = side.input
        if isinstance(exchange, ExchangeExec):
            side = exchange.with_inputs((sorted_on(exchange.input, keys),))
        sides.append(side)
    return plan.with_inputs(tuple(sides))


def test_ordering_check_wants_the_sort_above_a_hash_exchange(tpch_dir: Path) -> None:
    with flowsql.connect(parallelism=2) as s:
        # a query this small is otherwise costed onto one subtask, with no exchange at all
        s.sql("SET 'optimizer.small-query-on-one-subtask' = 'false'")
        for name in ("customer", "orders"):
            s.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
        hashed = _plan(s, QUERIES["inner"])
        assert count_nodes(hashed, ExchangeExec) and count_nodes(hashed, HashJoinExec)
        broken = _sorts_below_exchanges(merge_plan(hashed))
        with pytest.raises(PlanError, match=r"SortMergeJoin \(at .*SortMergeJoin\) needs its "
                                            r"left input sorted"):
            check_ordering(broken)
        # and the distribution check sees sorts that gather nothing below the exchanges
        with pytest.raises(PlanError, match="Sort .* needs all its rows on one subtask"):
            sanity_check(broken, s.settings, streaming=False)


def test_explain_and_operator_names(tpch_dir: Path) -> None:
    with flowsql.connect() as s:
        for name in ("customer", "orders"):
            s.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
        merged = merge_plan(_plan(s, "SELECT c_name, count(*) FROM customer JOIN orders "
                                     "ON c_custkey = o_custkey AND o_totalprice > c_acctbal "
                                     "GROUP BY c_name"))
    text = explain_physical(merged)
    assert ("SortMergeJoin[inner] keys=[c_custkey = o_custkey] "
            "residual=(o_totalprice > c_acctbal)") in text, text
    assert "SortAggregate groups=[c_name] aggs=[count(*)" in text, text
    join = next(n for n in _nodes(merged) if isinstance(n, SortMergeJoinExec))
    assert describe(join) == "SortMergeJoinExec (inner join)"


def _nodes(plan: PhysicalPlan) -> Iterator[PhysicalPlan]:
    yield plan
    for child in plan.inputs:
        yield from _nodes(child)
