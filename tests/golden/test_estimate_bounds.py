"""Estimate checks for the 22 TPC-H queries at SF 0.01, kept apart from the plan shape.

The shape goldens (``test_explain_golden``) print no estimates, so a better estimator does
not rewrite them; instead every join's and aggregate's estimate is compared with the rows
EXPLAIN ANALYZE reports, and its q-error (``max(est/act, act/est)``, both at least 1) must
stay within the bound of its query in ``QERROR_BOUNDS``. The bounds are what today's
estimator meets, with a little room; an estimator change that makes a query worse fails
here, one that makes it better should tighten its bound (the table is the record of
estimate quality, next to the SF 1 figures of ``benchmarks/explain_analyze_tpch.py``).
"""

from __future__ import annotations

import pytest

from flowsql.tpch.queries import QUERY_NUMBERS, load_query

#: per TPC-H query: (max q-error of any join, max q-error of any aggregate) at SF 0.01;
#: None: the query has no such operator. Measured values in the comments.
QERROR_BOUNDS: dict[int, tuple[float | None, float | None]] = {
    1: (None, 10000),   # agg 5015: GROUP BY of 4 groups estimated at its input's rows
    2: (20, 2),         # 12.5, 1.34
    3: (5, 10),         # 3.59, 4.85
    4: (5, 500),        # 3.12, 333
    5: (100, 10),       # 52.0, 5.00
    6: (None, 1.5),     # -, 1.00
    7: (500, 5000),     # 289, 3329
    8: (10, 100),       # 4.61, 66.9
    9: (30, 500),       # 18.7, 348
    10: (5, 3),         # 2.73, 1.68
    11: (3, 3),         # 2.14, 2.14
    12: (3, 100),       # 2.07, 74.3
    13: (2, 100),       # 1.36, 45.5
    14: (20, 1.5),      # 9.26, 1.00
    15: (1.5, 1.5),     # 1.00, 1.00
    16: (5, 20),        # 3.61, 10.9
    17: (1000, 1.5),    # 602, 1.00
    18: (10000, 50000),  # 4301, 30108
    19: (3, 1.5),       # 1.78, 1.00
    20: (200, 1.5),     # 104, 1.20
    21: (20, 200),      # 14.1, 100
    22: (3, 10),        # 2.45, 5.00
}


def test_every_query_has_bounds() -> None:
    assert sorted(QERROR_BOUNDS) == list(QUERY_NUMBERS)


@pytest.mark.parametrize("number", QUERY_NUMBERS)
def test_join_and_aggregate_estimates_within_bounds(number: int, tpch_session) -> None:  # type: ignore[no-untyped-def]
    analysis = tpch_session.sql("EXPLAIN ANALYZE " + load_query(number)).analysis
    join_bound, aggregate_bound = QERROR_BOUNDS[number]
    kinds = {"join": ("JoinExec", join_bound), "aggregate": ("AggregateExec", aggregate_bound)}
    seen = {kind: 0 for kind in kinds}
    too_far: list[str] = []
    for row in analysis.to_pylist():
        for kind, (suffix, bound) in kinds.items():
            if not row["node"].endswith(suffix):
                continue
            seen[kind] += 1
            assert row["q_error"] is not None, f"{row['description']} was not measured"
            if bound is None or row["q_error"] > bound:
                too_far.append(f"{kind} {row['description']}: estimated "
                               f"{row['estimated_rows']:.0f}, actual {row['actual_rows']}, "
                               f"q-error {row['q_error']:.2f} > bound {bound}")
    assert not too_far, "\n".join(too_far)
    assert (seen["join"] > 0) == (join_bound is not None)
    assert (seen["aggregate"] > 0) == (aggregate_bound is not None)
