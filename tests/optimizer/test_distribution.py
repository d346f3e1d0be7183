"""The distribution pass places exchanges only where a requirement is unmet, and the
distribution partial order obeys its laws."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import flowsql
from flowsql.planner.logical import SetOp
from flowsql.planner.properties import ANY, BROADCAST, SINGLE, Distribution
from flowsql.planner.schema import Field
from flowsql.session import Session
from tests.harness.tpch import TPCH_TABLES
from tests.optimizer import planbuilder as pb
from tests.optimizer.searchplans import exchanges as search_exchanges
from tests.optimizer.searchplans import planned, sized


@pytest.fixture(scope="module")
def session(tpch_dir: Path) -> Iterator[Session]:
    """Parallelism 2, planning for the workers however small the query (the plans under
    test are the parallel ones); only EXPLAIN runs here, so no worker is ever started."""
    s = flowsql.connect(parallelism=2)
    s.set("optimizer.small-query-on-one-subtask", "false")
    for name in TPCH_TABLES:
        s.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
    yield s
    s.close()


def physical(session: Session, sql: str, threshold: int | None = None) -> list[str]:
    """The physical plan's lines, under a broadcast threshold (restored afterwards)."""
    previous = session.settings.get("optimizer.broadcast-threshold-rows")
    if threshold is not None:
        session.set("optimizer.broadcast-threshold-rows", str(threshold))
    try:
        text = session.sql(f"EXPLAIN {sql}").plan_text or ""
    finally:
        if previous is None:
            session.settings.pop("optimizer.broadcast-threshold-rows", None)
        else:
            session.set("optimizer.broadcast-threshold-rows", previous)
    return [line.strip() for line in text.split("== Physical Plan ==")[1].strip().splitlines()]


def exchanges(lines: list[str]) -> list[str]:
    return [line.split(" rows=")[0] for line in lines if line.startswith("Exchange")]


def around_gather(lines: list[str]) -> list[str]:
    """The nodes just above and below the (only) gather, and the gather itself."""
    at = next(i for i, line in enumerate(lines) if line.startswith("Exchange[gather]"))
    return [line.split(" rows=")[0] for line in lines[at - 1:at + 2]]


def test_parallelism_one_places_no_exchange(tpch_session: Session) -> None:
    text = tpch_session.sql("EXPLAIN SELECT o_custkey, count(*) FROM orders GROUP BY 1"
                            ).plan_text or ""
    assert "Exchange" not in text


def test_grouped_aggregate_is_split_around_a_hash_exchange(session: Session) -> None:
    lines = physical(session, "SELECT o_custkey, sum(o_totalprice), avg(o_totalprice) "
                              "FROM orders GROUP BY o_custkey")
    assert exchanges(lines) == ["Exchange[gather]", "Exchange[hash] keys=[o_custkey]"]
    aggregates = [line for line in lines if line.startswith("HashAggregate")]
    assert len(aggregates) == 2
    assert "sum(CAST(o_totalprice AS DOUBLE))" in aggregates[1]  # avg's partial sum


def test_global_aggregate_gathers_partials(session: Session) -> None:
    lines = physical(session, "SELECT count(*) FROM lineitem")
    assert exchanges(lines) == ["Exchange[gather]"]
    above, _, below = around_gather(lines)
    assert above.startswith("HashAggregate") and below.startswith("HashAggregate")


def test_distinct_aggregate_is_hashed_unsplit(session: Session) -> None:
    lines = physical(session, "SELECT o_custkey, count(DISTINCT o_orderstatus) FROM orders "
                              "GROUP BY o_custkey")
    assert exchanges(lines) == ["Exchange[gather]", "Exchange[hash] keys=[o_custkey]"]
    assert sum(line.startswith("HashAggregate") for line in lines) == 1


# The join and set-operation shapes below depend on sizes: at SF 0.01 the cost model
# finds gathering both inputs of a join cheaper than any exchange on both, so they are
# planned over hand-built tables of SF 1's sizes.
ORDERS = sized("orders", 1_500_000, "o_orderkey", "o_custkey")
LINEITEM = sized("lineitem", 6_000_000, "l_orderkey", "l_quantity")
CUSTOMER = sized("customer", 150_000, "c_custkey", "c_nationkey")
NATION = sized("nation", 25, "n_nationkey", "n_name", distinct={"n_nationkey": 25})


def orders_lineitem_count(threshold: int | None = None) -> list[str]:
    """The exchanges of count(*) over orders JOIN lineitem ON the order key."""
    o, li = pb.scan(ORDERS), pb.scan(LINEITEM)
    joined = pb.join(o, li, "inner", pb.eq(pb.col(o, "o_orderkey"), pb.col(li, "l_orderkey")))
    counted = pb.aggregate(joined, [], n=pb.agg("count_star"))
    settings = {} if threshold is None else {"optimizer.broadcast-threshold-rows": str(threshold)}
    return search_exchanges(planned(counted, settings=settings))


def test_small_build_side_is_broadcast() -> None:
    c, n = pb.scan(CUSTOMER), pb.scan(NATION)
    joined = pb.join(c, n, "inner", pb.eq(pb.col(c, "c_nationkey"), pb.col(n, "n_nationkey")))
    plan = planned(pb.select(joined, "n_name", "c_custkey"))
    assert search_exchanges(plan) == sorted(["Exchange[gather]", "Exchange[broadcast]"])


def test_large_join_hashes_both_sides() -> None:
    assert orders_lineitem_count(threshold=0) == [
        "Exchange[gather]", "Exchange[hash] keys=[l_orderkey]",
        "Exchange[hash] keys=[o_orderkey]"]


def test_aggregate_on_the_join_key_needs_no_second_shuffle(session: Session) -> None:
    lines = physical(session, "SELECT o_orderkey, o_orderdate, sum(l_quantity) FROM orders "
                              "JOIN lineitem ON o_orderkey = l_orderkey "
                              "GROUP BY o_orderkey, o_orderdate", threshold=0)
    assert sorted(exchanges(lines)) == ["Exchange[gather]", "Exchange[hash] keys=[l_orderkey]",
                                        "Exchange[hash] keys=[o_orderkey]"]
    assert sum(line.startswith("HashAggregate") for line in lines) == 1


def test_join_reuses_the_partitioning_of_an_aggregate_below(session: Session) -> None:
    lines = physical(session, "SELECT o_orderkey, q FROM orders JOIN (SELECT l_orderkey, "
                              "sum(l_quantity) AS q FROM lineitem GROUP BY l_orderkey) t "
                              "ON o_orderkey = l_orderkey", threshold=0)
    assert sorted(exchanges(lines)) == ["Exchange[gather]", "Exchange[hash] keys=[l_orderkey]",
                                        "Exchange[hash] keys=[o_orderkey]"]


def test_not_in_broadcasts_its_subquery_side(session: Session) -> None:
    lines = physical(session, "SELECT c_custkey FROM customer WHERE c_custkey NOT IN "
                              "(SELECT o_custkey FROM orders)", threshold=0)
    assert exchanges(lines) == ["Exchange[gather]", "Exchange[broadcast]"]


def test_top_n_and_limit_cut_each_subtask_before_the_gather(session: Session) -> None:
    lines = physical(session, "SELECT o_orderkey FROM orders ORDER BY o_totalprice DESC "
                              "LIMIT 5 OFFSET 2")
    assert around_gather(lines) == [
        "TopN [o_totalprice DESC NULLS LAST] limit=5 offset=2", "Exchange[gather]",
        "TopN [o_totalprice DESC NULLS LAST] limit=7"]
    lines = physical(session, "SELECT o_orderkey FROM orders LIMIT 3")
    assert around_gather(lines) == ["Limit limit=3", "Exchange[gather]", "Limit limit=3"]


def test_window_with_partition_hashes_on_it(session: Session) -> None:
    lines = physical(session, "SELECT o_custkey, rank() OVER (PARTITION BY o_custkey "
                              "ORDER BY o_totalprice) FROM orders")
    assert exchanges(lines) == ["Exchange[gather]", "Exchange[hash] keys=[o_custkey]"]


def test_set_operations_hash_on_all_columns(session: Session) -> None:
    o, c = pb.select(pb.scan(ORDERS), "o_custkey"), pb.select(pb.scan(CUSTOMER), "c_custkey")
    fields = tuple(Field.fresh(f.name, f.dtype) for f in o.schema)
    plan = planned(SetOp(o, c, "intersect", False, fields))
    assert search_exchanges(plan) == ["Exchange[gather]", "Exchange[hash] keys=[c_custkey]",
                                      "Exchange[hash] keys=[o_custkey]"]
    lines = physical(session, "SELECT n_nationkey FROM nation UNION ALL "
                              "SELECT s_nationkey FROM supplier")
    assert exchanges(lines) == ["Exchange[gather]"]


# -- the partial order ------------------------------------------------------------------------

keys = st.lists(st.integers(1, 4), min_size=1, max_size=3, unique=True).map(tuple)
distributions = st.one_of(st.just(ANY), st.just(SINGLE), st.just(BROADCAST),
                          st.lists(keys, min_size=1, max_size=2).map(
                              lambda ks: Distribution.hash(*ks)))


@given(distributions)
def test_satisfies_is_reflexive_and_any_is_weakest(d: Distribution) -> None:
    assert d.satisfies(d)
    assert d.satisfies(ANY)
    assert not ANY.satisfies(d) or d == ANY


@given(distributions, distributions, distributions)
# a requirement with two key sets, once read by its first key set only
@example(Distribution.hash((1,)), Distribution.hash((1,), (4,)), Distribution.hash((4,)))
def test_satisfies_is_transitive(a: Distribution, b: Distribution, c: Distribution) -> None:
    if a.satisfies(b) and b.satisfies(c):
        assert a.satisfies(c)


def test_hash_on_a_subset_of_the_keys_satisfies() -> None:
    assert Distribution.hash((1,)).satisfies(Distribution.hash((1, 2)))
    assert not Distribution.hash((1, 3)).satisfies(Distribution.hash((1, 2)))
    assert Distribution.hash((3,), (1,)).satisfies(Distribution.hash((1, 2)))
    assert SINGLE.satisfies(Distribution.hash((1,)))
    assert not BROADCAST.satisfies(SINGLE) and not SINGLE.satisfies(BROADCAST)


def test_above_the_threshold_a_side_is_broadcast_when_that_moves_fewer_rows() -> None:
    """orders (1.5 million rows) joined with lineitem (6 million): two copies of orders
    move fewer bytes than shuffling both sides, so orders is broadcast under a threshold of
    200 thousand (orders is within ten times it); under 100 thousand it is not (a side over
    ten times the threshold is never replicated) and both sides are hashed."""
    assert orders_lineitem_count(threshold=200_000) == [
        "Exchange[broadcast]", "Exchange[gather]"]
    assert orders_lineitem_count(threshold=100_000) == [
        "Exchange[gather]", "Exchange[hash] keys=[l_orderkey]",
        "Exchange[hash] keys=[o_orderkey]"]
