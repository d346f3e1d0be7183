"""Orderings as interesting properties in the physical search: a sort placed for a merge
join serves the ORDER BY above it, a GROUP BY over sorted input streams through a sort
aggregate without a second sort, and without such orders -- a merge join with nothing
above reusing its order, a GROUP BY over an unsorted input even under an ORDER BY on its
keys (TPC-H Q1's shape) -- the hash algorithms win.
Results equal DuckDB's on one subtask and on two (the parallel path forced)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import flowsql
from flowsql.planner.physical import (
    ExchangeExec,
    HashAggregateExec,
    HashJoinExec,
    LimitExec,
    PhysicalPlan,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
    TopNExec,
)
from flowsql.session import Session
from flowsql.session.execute.planning import plan_query
from flowsql.sql.statement_parser import parse_one
from tests.harness.merge_plans import count_nodes
from tests.harness.operators import assert_rows
from tests.harness.tpch import TPCH_TABLES

#: both inputs arrive sorted on the join key, and the result is ordered on it
SORTED_JOIN = ("SELECT a.k, a.v, b.w FROM "
               "(SELECT o_orderkey AS k, o_totalprice AS v FROM orders ORDER BY o_orderkey) a "
               "JOIN (SELECT l_orderkey AS k, l_quantity AS w FROM lineitem ORDER BY l_orderkey) b "
               "ON a.k = b.k ORDER BY a.k")
#: a GROUP BY over input already sorted on its key
SORTED_GROUP_BY = ("SELECT l_orderkey, count(*) AS n, sum(l_quantity) AS q FROM "
                   "(SELECT l_orderkey, l_quantity FROM lineitem ORDER BY l_orderkey) "
                   "GROUP BY l_orderkey")
#: a many-to-many join ordered on its key: sorting both inputs (1600 rows) for a merge join
#: is cheaper than sorting its 6000 output rows, and the same sorts serve the ORDER BY
MERGE_SERVES_ORDER_BY = ("SELECT s_nationkey, s_name, c_name FROM supplier JOIN customer "
                         "ON s_nationkey = c_nationkey ORDER BY s_nationkey")
#: the same join with no order asked above it: a sort just for a merge join never pays
MERGE_WITHOUT_ORDER_BY = ("SELECT s_nationkey, s_name, c_name FROM supplier JOIN customer "
                          "ON s_nationkey = c_nationkey")
#: TPC-H Q1's shape: GROUP BY and ORDER BY on the same keys over an unsorted scan
GROUP_BY_ORDER_BY = ("SELECT l_returnflag, l_linestatus, count(*) AS n, sum(l_quantity) AS q "
                     "FROM lineitem GROUP BY l_returnflag, l_linestatus "
                     "ORDER BY l_returnflag, l_linestatus")
#: no input order to reuse: a join and an aggregate on different keys
UNSORTED = ("SELECT c_nationkey, count(*) AS n FROM customer JOIN orders "
            "ON c_custkey = o_custkey GROUP BY c_nationkey")


@pytest.fixture(scope="module", params=[1, 2], ids=["parallelism1", "parallelism2"])
def session(request: pytest.FixtureRequest, tpch_dir: Path) -> Iterator[Session]:
    s = flowsql.connect(parallelism=request.param,
                        **{"optimizer.small-query-on-one-subtask": "false"})
    for name in TPCH_TABLES:
        s.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
    yield s
    s.close()


def _plan(session: Session, sql: str) -> PhysicalPlan:
    _, _, plan = plan_query(session, parse_one(sql))  # type: ignore[arg-type]
    return plan  # type: ignore[no-any-return]


def _parallelism(session: Session) -> int:
    return int(session.settings.get("parallelism.default", "1"))


def _below_exchanges_and_projections(plan: PhysicalPlan) -> PhysicalPlan:
    while isinstance(plan, ExchangeExec) or type(plan).__name__ == "ProjectExec":
        plan = plan.inputs[0]
    return plan


def test_one_sort_serves_the_merge_join_and_the_order_by(session: Session,
                                                         duckdb_tpch) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(session, SORTED_JOIN)
    assert count_nodes(plan, SortMergeJoinExec) == 1
    assert count_nodes(plan, HashJoinExec) == 0
    if _parallelism(session) == 1:
        # one sort per input of the merge join; the left one also serves the ORDER BY
        assert count_nodes(plan, SortExec) == 2
        assert isinstance(_below_exchanges_and_projections(plan), SortMergeJoinExec)
    actual = session.sql(SORTED_JOIN).to_arrow()
    expected = duckdb_tpch.sql(SORTED_JOIN).to_arrow_table()
    assert_rows(actual, expected)
    keys = actual.column("k").to_pylist()
    assert keys == sorted(keys)


def test_group_by_over_sorted_input_streams_without_a_second_sort(
        session: Session, duckdb_tpch) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(session, SORTED_GROUP_BY)
    if _parallelism(session) == 1:
        assert count_nodes(plan, SortAggregateExec) == 1
        assert count_nodes(plan, HashAggregateExec) == 0
        assert count_nodes(plan, SortExec) == 1  # the subquery's, none added for the GROUP BY
    actual = session.sql(SORTED_GROUP_BY).to_arrow()
    assert_rows(actual, duckdb_tpch.sql(SORTED_GROUP_BY).to_arrow_table())


def test_without_an_order_to_reuse_the_hash_algorithms_win(session: Session,
                                                           duckdb_tpch) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(session, UNSORTED)
    assert count_nodes(plan, SortMergeJoinExec) == 0
    assert count_nodes(plan, SortAggregateExec) == 0
    assert count_nodes(plan, SortExec) == 0
    assert_rows(session.sql(UNSORTED).to_arrow(), duckdb_tpch.sql(UNSORTED).to_arrow_table())


def test_explain_verbose_shows_the_merge_joins_order(tpch_dir: Path) -> None:
    with flowsql.connect() as s:
        for name in ("orders", "lineitem"):
            s.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
        text = s.sql("EXPLAIN VERBOSE " + SORTED_JOIN).plan_text
    join = next(line for line in text.splitlines() if "SortMergeJoin" in line)
    assert "order=[k ASC NULLS LAST]" in join


def test_top_n_over_a_merge_join_on_its_keys_is_a_limit(session: Session,
                                                        duckdb_tpch) -> None:  # type: ignore[no-untyped-def]
    sql = SORTED_JOIN + " LIMIT 7"
    plan = _plan(session, sql)
    if _parallelism(session) == 1:
        assert count_nodes(plan, TopNExec) == 0
        assert count_nodes(plan, LimitExec) == 1
        assert count_nodes(plan, SortExec) == 2
    actual = session.sql(sql).to_arrow()
    expected = duckdb_tpch.sql(sql).to_arrow_table()
    # ties on k may pick different rows: the keys, in order, must agree
    assert actual.column("k").to_pylist() == expected.column("k").to_pylist()


def test_sorts_placed_for_a_merge_join_serve_the_order_by_above_it(
        session: Session, duckdb_tpch) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(session, MERGE_SERVES_ORDER_BY)
    assert count_nodes(plan, SortMergeJoinExec) == 1
    assert count_nodes(plan, HashJoinExec) == 0
    # one sort per input of the join, none above it for the ORDER BY
    assert count_nodes(plan, SortExec) == 2
    assert isinstance(_below_exchanges_and_projections(plan), SortMergeJoinExec)
    actual = session.sql(MERGE_SERVES_ORDER_BY).to_arrow()
    assert_rows(actual, duckdb_tpch.sql(MERGE_SERVES_ORDER_BY).to_arrow_table())
    keys = actual.column("s_nationkey").to_pylist()
    assert keys == sorted(keys)


def test_no_sort_is_placed_for_a_merge_join_alone(session: Session,
                                                  duckdb_tpch) -> None:  # type: ignore[no-untyped-def]
    plan = _plan(session, MERGE_WITHOUT_ORDER_BY)
    assert count_nodes(plan, SortMergeJoinExec) == 0
    assert count_nodes(plan, HashJoinExec) == 1
    assert count_nodes(plan, SortExec) == 0
    assert_rows(session.sql(MERGE_WITHOUT_ORDER_BY).to_arrow(),
                duckdb_tpch.sql(MERGE_WITHOUT_ORDER_BY).to_arrow_table())


def test_a_group_by_under_an_order_by_on_its_keys_hashes_then_sorts_the_groups(
        session: Session, duckdb_tpch) -> None:  # type: ignore[no-untyped-def]
    """Sorting every input row once for both would look cheaper while the groups are
    estimated at the input's row count; a sort aggregate needs an order its input
    delivers, so the hash aggregate runs and only its groups are sorted."""
    plan = _plan(session, GROUP_BY_ORDER_BY)
    assert count_nodes(plan, SortAggregateExec) == 0
    assert count_nodes(plan, HashAggregateExec) >= 1
    assert count_nodes(plan, SortExec) == 1
    assert isinstance(plan, SortExec)
    actual = session.sql(GROUP_BY_ORDER_BY).to_arrow()
    expected = duckdb_tpch.sql(GROUP_BY_ORDER_BY).to_arrow_table()
    assert_rows(actual, expected)
    assert actual.select(["l_returnflag", "l_linestatus"]).to_pylist() == \
        expected.select(["l_returnflag", "l_linestatus"]).to_pylist()
