"""Row estimates: scan counts, default selectivities, foreign-key joins, aggregates; and one
test per estimation rule over column statistics, with hand-checked figures."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.planner import types as T
from flowsql.planner.catalog import ColumnStatistics, TableEntry, TableStatistics
from flowsql.planner.expressions import Expr, UdfCall
from flowsql.planner.logical import Scan
from flowsql.planner.statistics import ANALYZED
from flowsql.planner.udf import DEFAULT_SELECTIVITY, FunctionHints, UserFunction

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
    not_,
    or_,
    project,
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
    contains = call("like", col(s, "b"), lit("%j%"))
    # two value predicates on one table: the less selective counts by its square root
    assert est.rows(filter_(s, and_(like, contains))) == \
        pytest.approx(900 * 0.25 * 0.25 ** 0.5)
    # a range multiplies in
    assert est.rows(filter_(s, and_(like, gt(col(s, "a"), lit(1))))) == \
        pytest.approx(900 * 0.25 * (1 / 3))


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


# -- rules over column statistics (hand-checked figures) -------------------------------------

def analyzed(name: str, rows: int, columns: dict[str, tuple[pa.DataType, ColumnStatistics]]
             ) -> TableEntry:
    """A table whose statistics carry per-column figures, as ANALYZE leaves them."""
    schema = pa.schema([pa.field(c, t) for c, (t, _) in columns.items()])
    stats = TableStatistics(rows, columns={c: s for c, (_, s) in columns.items()},
                            origin=ANALYZED)
    return TableEntry(name, schema, {"path": f"{name}.parquet"}, stats)


def stats(distinct: int | None = None, low: float | None = None, high: float | None = None,
          histogram: tuple[float, ...] = (), nulls: int | None = 0) -> ColumnStatistics:
    return ColumnStatistics(nulls, distinct, low, high, histogram)


@pytest.fixture
def facts() -> Scan:
    """1000 rows: k (integer 1..50, 50 values), v (float, histogram), s (string, 20 values,
    250 NULLs), c (integer, 10 values), d (date, 1992-01-01 .. 1998-12-31)."""
    return scan(analyzed("facts", 1000, {
        "k": (T.INT64, stats(50, 1, 50)),
        "v": (T.FLOAT64, stats(1000, 0, 100, histogram=(0.0, 10.0, 20.0, 100.0))),
        "s": (T.STRING, stats(20, nulls=250)),
        "c": (T.INT64, stats(10, 0, 9)),
        "d": (T.DATE, stats(2557, 8035, 10591)),
    }))


def rows_where(est: CardinalityEstimator, s: Scan, predicate: Expr) -> float:
    return est.rows(filter_(s, predicate))


def test_equality_is_one_over_distinct_and_zero_outside_min_max(est, facts):
    assert rows_where(est, facts, eq(col(facts, "k"), lit(7))) == pytest.approx(1000 / 50)
    assert rows_where(est, facts, eq(lit(7), col(facts, "k"))) == pytest.approx(1000 / 50)
    assert rows_where(est, facts, eq(col(facts, "k"), lit(51))) == 0
    # 750 non-null strings over 20 values
    assert rows_where(est, facts, eq(col(facts, "s"), lit("x"))) == pytest.approx(750 / 20)
    assert rows_where(est, facts, call("neq", col(facts, "k"), lit(7))) == \
        pytest.approx(1000 * 49 / 50)


def test_ranges_interpolate_in_the_histogram(est, facts):
    v = col(facts, "v")
    # three equi-depth buckets [0,10] [10,20] [20,100]: 15 is half way through the second
    assert rows_where(est, facts, call("lt", v, lit(15.0, T.FLOAT64))) == \
        pytest.approx(1000 * 1.5 / 3)
    # 60 is half way through the third bucket
    assert rows_where(est, facts, gt(v, lit(60.0, T.FLOAT64))) == pytest.approx(1000 * 0.5 / 3)
    assert rows_where(est, facts, gt(v, lit(100.0, T.FLOAT64))) == 0


def test_between_is_one_range_uniform_over_min_max_of_whole_steps(est, facts):
    k = col(facts, "k")
    between = and_(call("gte", k, lit(1)), call("lte", k, lit(5)))
    # 5 of the 50 integers 1..50, not 1/3 * 1/3 and not two dampened halves
    assert rows_where(est, facts, between) == pytest.approx(1000 * 5 / 50)
    assert rows_where(est, facts, call("lt", k, lit(11))) == pytest.approx(1000 * 10 / 50)
    # a date range: one year of the seven
    d = col(facts, "d")
    year = and_(call("gte", d, lit(dt.date(1994, 1, 1), T.DATE)),
                call("lt", d, lit(dt.date(1995, 1, 1), T.DATE)))
    assert rows_where(est, facts, year) == pytest.approx(1000 * 365 / 2557)
    # an equality on the same column makes the range redundant, or the conjunction empty
    inside = and_(eq(k, lit(3)), call("lte", k, lit(5)))
    assert rows_where(est, facts, inside) == pytest.approx(1000 / 50)
    assert rows_where(est, facts, and_(eq(k, lit(9)), call("lte", k, lit(5)))) == 0


def test_in_list_sums_equalities(est, facts):
    k = col(facts, "k")
    assert rows_where(est, facts, call("in_list", k, lit(1), lit(2), lit(3))) == \
        pytest.approx(1000 * 3 / 50)
    # 99 is outside 1..50 and finds nothing
    assert rows_where(est, facts, call("in_list", k, lit(1), lit(99))) == \
        pytest.approx(1000 / 50)
    c = col(facts, "c")
    everything = call("in_list", c, *(lit(i) for i in range(12)))
    assert rows_where(est, facts, everything) == pytest.approx(1000)  # capped at all rows


def test_like_prefix_is_more_selective_than_contains(est, facts):
    s = col(facts, "s")
    prefix = rows_where(est, facts, call("like", s, lit("abc%")))
    contains = rows_where(est, facts, call("like", s, lit("%abc%")))
    two = rows_where(est, facts, call("like", s, lit("%a%b%")))
    assert prefix == pytest.approx(750 * 0.1)
    assert contains == pytest.approx(750 * 0.25)
    assert two == pytest.approx(750 * 0.25 * 0.25)
    assert rows_where(est, facts, call("like", s, lit("abc"))) == pytest.approx(750 / 20)


def test_null_tests_use_the_null_count(est, facts):
    s = col(facts, "s")
    assert rows_where(est, facts, call("is_null", s)) == pytest.approx(250)
    assert rows_where(est, facts, call("is_not_null", s)) == pytest.approx(750)
    assert rows_where(est, facts, call("is_null", col(facts, "k"))) == 0


def test_not_and_or(est, facts):
    k, c = col(facts, "k"), col(facts, "c")
    assert rows_where(est, facts, not_(eq(c, lit(1)))) == pytest.approx(900)
    either = or_(eq(c, lit(1)), eq(k, lit(1)))
    assert rows_where(est, facts, either) == pytest.approx(1000 * (1 - 0.9 * 0.98))


def test_conjunction_on_one_table_uses_exponential_backoff(est, facts):
    # backoff over the value predicates; the ranges multiply in
    k, c, s, v = (col(facts, n) for n in ("k", "c", "s", "v"))
    predicate = and_(eq(c, lit(1)),                       # 1/10
                     call("lt", k, lit(26)),              # 25/50, a range
                     call("like", s, lit("%x%")),         # 0.75 * 0.25
                     call("lt", v, lit(10.0, T.FLOAT64)))  # 1/3, a range
    expected = 0.1 * (0.1875 ** 0.5) * (1 / 3) * 0.5
    assert rows_where(est, facts, predicate) == pytest.approx(1000 * expected)


def test_comparison_of_two_columns_of_one_table_multiplies(est, facts):
    k, c, v = (col(facts, n) for n in ("k", "c", "v"))
    predicate = and_(eq(c, lit(1)), call("lt", k, v))  # 1/10 and the default 1/3
    assert rows_where(est, facts, predicate) == pytest.approx(1000 * 0.1 / 3)


def test_conjunction_over_two_tables_multiplies(est, facts):
    other = scan(analyzed("other", 100, {"c": (T.INT64, stats(4, 0, 3))}))
    both = join(facts, other, "cross", None)
    predicate = and_(eq(col(facts, "c"), lit(1)), eq(col(other, "c"), lit(1)))
    assert est.rows(filter_(both, predicate)) == pytest.approx(1000 * 100 * 0.1 * 0.25)


def test_udf_predicate_uses_its_selectivity_hint(est, facts):
    hinted = UserFunction("f", "m.f", result_type=T.BOOL, hints=FunctionHints(selectivity=0.02))
    plain = UserFunction("g", "m.g", result_type=T.BOOL)
    k = col(facts, "k")
    assert rows_where(est, facts, UdfCall(hinted, (k,), T.BOOL)) == pytest.approx(20)
    assert rows_where(est, facts, UdfCall(plain, (k,), T.BOOL)) == \
        pytest.approx(1000 * DEFAULT_SELECTIVITY)


def test_distinct_values_shrink_with_the_rows(est, facts):
    # a filter on another column keeps 1/10 of the rows: of k's 50 values (20 rows each)
    # 50 * (1 - 0.9 ** 20) survive
    kept = filter_(facts, eq(col(facts, "c"), lit(1)))
    assert est.domain(kept, col(kept, "k").cid) == pytest.approx(50 * (1 - 0.9 ** 20))
    # a filter on the column itself cuts its values in proportion
    low = filter_(facts, call("lt", col(facts, "k"), lit(11)))
    assert est.domain(low, col(low, "k").cid) == pytest.approx(10)
    one = filter_(facts, eq(col(facts, "k"), lit(3)))
    assert est.domain(one, col(one, "k").cid) == pytest.approx(1)


def test_join_key_keeps_the_values_found_on_both_sides(est, facts):
    dim = scan(analyzed("dim", 10, {"c": (T.INT64, stats(10, 0, 9)),
                                    "n": (T.STRING, stats(10))}))
    few = filter_(dim, call("lt", col(dim, "c"), lit(4)))  # keys 0..3
    j = join(facts, few, "inner", eq(col(facts, "c"), col(few, "c")))
    # 1000 * 4 / max(10, 4): each of the four keys matches 100 fact rows
    assert est.rows(j) == pytest.approx(400)
    assert est.domain(j, col(facts, "c").cid) == pytest.approx(4)
    assert est.domain(j, col(few, "c").cid) == pytest.approx(4)


def test_two_key_join_combines_both_keys_with_backoff(est):
    a = scan(analyzed("a", 10_000, {"x": (T.INT64, stats(1000)), "y": (T.INT64, stats(20)),
                                    "id": (T.INT64, stats(10_000))}))
    b = scan(analyzed("b", 500, {"x": (T.INT64, stats(100)), "y": (T.INT64, stats(4)),
                                 "id": (T.INT64, stats(500))}))
    condition = and_(eq(col(a, "x"), col(b, "x")), eq(col(a, "y"), col(b, "y")))
    # domains max(1000, 100) and max(20, 4), the smaller by its square root
    expected = 10_000 * 500 / (1000 * 20 ** 0.5)
    assert est.rows(join(a, b, "inner", condition)) == pytest.approx(expected)
    assert est.inner_join_rows(a, b, condition) == pytest.approx(expected)


def test_composite_key_join_matches_each_row_of_the_referencing_side_once(est):
    # lineitem (partkey, suppkey) references partsupp's (partkey, suppkey)
    partsupp = scan(analyzed("partsupp", 8000, {"pk": (T.INT64, stats(2000)),
                                                "sk": (T.INT64, stats(100))}))
    lineitem = scan(analyzed("lineitem", 60_000, {"pk": (T.INT64, stats(2000)),
                                                  "sk": (T.INT64, stats(100))}))
    condition = and_(eq(col(lineitem, "pk"), col(partsupp, "pk")),
                     eq(col(lineitem, "sk"), col(partsupp, "sk")))
    assert est.rows(join(lineitem, partsupp, "inner", condition)) == pytest.approx(60_000)


def test_semi_and_anti_joins_keep_the_fraction_of_keys_found(est, facts):
    dim = scan(analyzed("dim", 10, {"c": (T.INT64, stats(10, 0, 9))}))
    few = filter_(dim, call("lt", col(dim, "c"), lit(4)))
    condition = eq(col(facts, "c"), col(few, "c"))
    assert est.rows(join(facts, few, "semi", condition)) == pytest.approx(400)
    assert est.rows(join(facts, few, "anti", condition)) == pytest.approx(600)
    # an outer join keeps at least its preserved side
    assert est.rows(join(facts, few, "left", condition)) == pytest.approx(1000)
    assert est.rows(join(few, facts, "left", eq(col(few, "c"), col(facts, "c")))) == \
        pytest.approx(400)


def test_group_by_uses_distinct_counts_with_backoff(est, facts):
    assert est.rows(aggregate(facts, ["c"], n=agg("count_star"))) == pytest.approx(10)
    # 50 and 10 values: 50 * sqrt(10)
    assert est.rows(aggregate(facts, ["k", "c"], n=agg("count_star"))) == \
        pytest.approx(50 * 10 ** 0.5)
    # never more groups than rows
    assert est.rows(aggregate(facts, ["v", "k"], n=agg("count_star"))) == pytest.approx(1000)


def test_group_by_leaves_out_keys_a_table_key_determines(est):
    customer = scan(analyzed("customer", 1500, {"custkey": (T.INT64, stats(1500)),
                                                "name": (T.STRING, stats(1490)),
                                                "nationkey": (T.INT64, stats(25))}))
    nation = scan(analyzed("nation", 25, {"n_nationkey": (T.INT64, stats(25)),
                                          "nname": (T.STRING, stats(25))}))
    j = join(customer, nation, "inner",
             eq(col(customer, "nationkey"), col(nation, "n_nationkey")))
    groups = aggregate(j, ["custkey", "name", "nname"], n=agg("count_star"))
    assert est.rows(groups) == pytest.approx(1500)
    # names are (almost) unique too: 1490 of 1500 rows
    by_name = aggregate(j, ["name", "nname"], n=agg("count_star"))
    assert est.rows(by_name) == pytest.approx(1490)
    # without any key of customer, its nation key and the nation's name
    by_both = aggregate(j, ["nationkey", "nname"], n=agg("count_star"))
    assert est.rows(by_both) == pytest.approx(25)


def test_strings_without_statistics_have_a_fraction_of_the_rows_as_values(est):
    s = scan(table("t", 10_000, a=T.STRING))
    assert est.rows(aggregate(s, ["a"], n=agg("count_star"))) == pytest.approx(1000)
    assert est.rows(aggregate(scan(table("u", 50, a=T.STRING)), ["a"])) == pytest.approx(50)


def test_extract_year_spans_the_years_of_the_date_range(est, facts):
    d = col(facts, "d")
    years = project(facts, y=call("extract_year", d, dtype=T.INT64))
    assert est.rows(aggregate(years, ["y"], n=agg("count_star"))) == pytest.approx(7)


def test_an_expression_filtered_to_constants_has_that_many_values(est, facts):
    code = call("substring", col(facts, "s"), lit(1), lit(2), dtype=T.STRING)
    kept = filter_(facts, call("in_list", code, lit("13"), lit("31"), lit("23")))
    codes = project(kept, code=code)
    assert est.rows(aggregate(codes, ["code"], n=agg("count_star"))) == pytest.approx(3)


def test_counts_spread_around_the_mean_group_size(est, facts):
    per_k = aggregate(facts, ["k"], n=agg("count_star"))  # 50 groups of 20 rows
    assert est.rows(aggregate(per_k, ["n"], m=agg("count_star"))) == pytest.approx(41)


def test_a_column_the_plan_does_not_have_is_bounded_by_its_rows(est, facts):
    other = scan(table("other", 10, a=T.INT64))
    assert est.domain(facts, col(other, "a").cid) == 1000


def test_key_pairs_sharing_a_column_count_once(est):
    # a.x = b.x AND a.y = b.x (a.x = a.y holds below, as transitive predicates give it)
    a = scan(analyzed("a", 1000, {"x": (T.INT64, stats(100)), "y": (T.INT64, stats(100))}))
    b = scan(analyzed("b", 100, {"x": (T.INT64, stats(100))}))
    once = eq(col(a, "x"), col(b, "x"))
    twice = and_(once, eq(col(a, "y"), col(b, "x")))
    assert est.inner_join_rows(a, b, twice) == pytest.approx(est.inner_join_rows(a, b, once))
    assert est.inner_join_rows(a, b, once) == pytest.approx(1000)


def test_having_on_an_aggregate_reads_its_normal_approximation(est, facts):
    # 10 groups of 100 rows; k uniform over [1, 50]: mean 25.5, variance 49^2 / 12
    groups = aggregate(facts, ["c"], total=agg("sum", col(facts, "k")),
                       mean=agg("avg", col(facts, "k"), dtype=T.FLOAT64),
                       n=agg("count_star"))
    total, mean, n = (col(groups, name) for name in ("total", "mean", "n"))
    sd = (100 * (49 ** 2 / 12 + 25.5 ** 2)) ** 0.5  # compound Poisson sum of 100 values
    assert est.rows(filter_(groups, gt(total, lit(2550)))) == pytest.approx(5)
    assert est.rows(filter_(groups, gt(total, lit(2550 + sd)))) == \
        pytest.approx(10 * 0.158655, rel=1e-4)
    # an average of 100 values: standard deviation (49^2 / 12 / 100) ** 0.5 = 1.41
    assert est.rows(filter_(groups, call("lt", mean, lit(25.5 - 2 * (49 ** 2 / 1200) ** 0.5,
                                                         T.FLOAT64)))) == \
        pytest.approx(10 * 0.0227501, rel=1e-4)
    # counts are Poisson: mean 100, standard deviation 10
    assert est.rows(filter_(groups, gt(n, lit(110)))) == pytest.approx(10 * 0.158655, rel=1e-4)
