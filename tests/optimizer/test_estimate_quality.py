"""Cardinality estimates of the 22 TPC-H plans at SF 0.01 against the rows DuckDB counts.

Statistics stand in for ANALYZE: exact per-column figures DuckDB computes over the same
Parquet files (see ``estimate_quality.py``). Every join and aggregate of each optimized plan
is compared with its actual row count by the q-error ``max(est/act, act/est)``.

The bounds are what the estimator meets today, with some room for plan changes; tighten
them when it improves. The few joins allowed above the general bound are listed with the
reason no statistic can help them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .estimate_quality import NodeEstimate, catalog, median, oracle, query_estimates

#: median q-error over every join and aggregate of the 22 plans
MEDIAN_BOUND = 1.5
#: q-error bound of every join not listed in KNOWN_MISSES
JOIN_BOUND = 15.0
#: the queries whose estimates the issue found off by more than 10x: every join and
#: aggregate of them within this bound
NAMED_QUERIES, NAMED_BOUND = (2, 5, 7, 8, 9, 21), 15.0
#: (query, join label) -> (its own bound, why it misses)
KNOWN_MISSES = {
    (17, "inner join"): (500.0, "no part is Brand#23 in MED BOX at SF 0.01: 0 actual rows"),
    (17, "left join"): (500.0, "the same empty input"),
    (17, "semi join"): (500.0, "the same empty input, reducing the subquery's lineitem"),
    (19, "inner join"): (20.0, "1 actual row; in each of three ORed conjunctions brand "
                               "and container are independent in the data but dampened as "
                               "if correlated, and 'AIR REG' is no ship mode"),
}


@pytest.fixture(scope="module")
def estimates(tpch_dir: Path) -> list[NodeEstimate]:
    con = oracle(tpch_dir)
    cat = catalog(tpch_dir, con)
    return [n for number in range(1, 23) for n in query_estimates(cat, con, number)]


def test_median_q_error(estimates: list[NodeEstimate]) -> None:
    assert len(estimates) > 80
    assert median([n.q_error for n in estimates]) < MEDIAN_BOUND


def test_no_join_far_off_except_the_known_misses(estimates: list[NodeEstimate]) -> None:
    for n in estimates:
        if n.kind != "join":
            continue
        bound, why = KNOWN_MISSES.get((n.query, n.label), (JOIN_BOUND, ""))
        assert n.q_error <= bound, (
            f"Q{n.query} {n.label}: estimated {n.estimated:.0f}, actual {n.actual} "
            f"(q-error {n.q_error:.1f} > {bound}) {why}")


def test_queries_the_old_estimates_missed_by_10x(estimates: list[NodeEstimate]) -> None:
    for n in estimates:
        if n.query in NAMED_QUERIES:
            assert n.q_error <= NAMED_BOUND, (
                f"Q{n.query} {n.label}: estimated {n.estimated:.0f}, actual {n.actual}")


def test_group_by_of_few_groups(estimates: list[NodeEstimate]) -> None:
    # Q1 groups 60175 rows into 4 (return flag x line status); Q4 and Q5 into 5
    for number in (1, 4, 5, 12):
        (top,) = [n for n in estimates if n.query == number and n.kind == "aggregate"]
        assert top.q_error < 1.5, f"Q{number}: estimated {top.estimated}, actual {top.actual}"
