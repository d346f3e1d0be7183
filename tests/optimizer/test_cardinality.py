"""Row estimates: scan counts, default selectivities, foreign-key joins, aggregates."""

from __future__ import annotations

import pytest

from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.planner import types as T

from .planbuilder import (
    agg,
    aggregate,
    and_,
    call,
    col,
    eq,
    filter_,
    gt,
    join,
    limit,
    lit,
    scan,
    table,
)


@pytest.fixture
def est() -> CardinalityEstimator:
    return CardinalityEstimator()


def test_filters_use_default_selectivities(est):
    s = scan(table("x", 900, a=T.INT64, b=T.STRING))
    assert est.rows(s) == 900
    assert est.rows(filter_(s, gt(col(s, "a"), lit(1)))) == pytest.approx(300)
    assert est.rows(filter_(s, eq(col(s, "b"), lit("k")))) == pytest.approx(90)
    like = call("like", col(s, "b"), lit("%k"))
    # two predicates on one table: the less selective counts by its square root
    assert est.rows(filter_(s, and_(like, gt(col(s, "a"), lit(1))))) == \
        pytest.approx(900 * 0.25 * (1 / 3) ** 0.5)


def test_equality_on_small_domain_uses_its_size(est):
    region = scan(table("region", 5, r_name=T.STRING))
    assert est.rows(filter_(region, eq(col(region, "r_name"), lit("ASIA")))) == pytest.approx(1)


def test_foreign_key_join_scales_many_side_by_key_side_filter(est):
    orders = scan(table("orders", 1500, o_orderkey=T.INT64, o_date=T.INT64))
    items = scan(table("lineitem", 6000, l_orderkey=T.INT64))
    recent = filter_(orders, gt(col(orders, "o_date"), lit(0)))  # 1/3 of the orders
    j = join(items, recent, "inner", eq(col(items, "l_orderkey"), col(recent, "o_orderkey")))
    assert est.rows(j) == pytest.approx(2000)
    semi = join(items, recent, "semi", eq(col(items, "l_orderkey"), col(recent, "o_orderkey")))
    assert est.rows(semi) <= est.rows(items)


def test_aggregate_and_limit(est):
    s = scan(table("x", 1000, a=T.INT64))
    assert est.rows(aggregate(s, [], n=agg("count_star"))) == 1
    assert est.rows(aggregate(s, ["a"], n=agg("count_star"))) == 1000
    assert est.rows(limit(s, 7)) == 7
