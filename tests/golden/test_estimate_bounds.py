"""Estimate checks for the 22 TPC-H queries at SF 0.01, kept apart from the plan shape.

The shape goldens (``test_explain_golden``) print no estimates, so a better estimator does
not rewrite them; instead every join's and aggregate's estimate is compared with the rows
EXPLAIN ANALYZE reports, and its q-error (``max(est/act, act/est)``, both at least 1) must
stay within the bound of its query in ``QERROR_BOUNDS``. The tables are analyzed first
(``ANALYZE TABLE``), as the issue's estimate targets assume. The bounds are what today's
estimator meets, with a little room; an estimator change that makes a query worse fails
here, one that makes it better should tighten its bound (the table is the record of
estimate quality, next to the SF 1 figures of ``benchmarks/explain_analyze_tpch.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from tests.harness.tpch import TPCH_TABLES, create_table_sql

#: per TPC-H query: (max q-error of any join, max q-error of any aggregate) at SF 0.01
#: after ANALYZE TABLE of every table; None: the query has no such operator. Measured
#: values in the comments.
QERROR_BOUNDS: dict[int, tuple[float | None, float | None]] = {
    1: (None, 1.5),     # -, 1.06
    2: (7.5, 4.5),      # 4.98, 2.94
    3: (13, 15),        # 8.81, 10.1: orders before a date x lineitem shipped after it
    4: (1.7, 1.5),      # 1.13, 1.00
    5: (5.5, 1.5),      # 3.59, 1.00
    6: (None, 1.5),     # -, 1.00
    7: (9.5, 4.5),      # 6.26, 2.94
    8: (2, 5.5),        # 1.21, 3.50
    9: (7, 4),          # 4.67, 2.62
    10: (2.5, 2.5),     # 1.54, 1.53
    11: (2, 2),         # 1.25, 1.24
    12: (1.5, 1.5),     # 1.02, 1.00
    13: (1.7, 2.5),     # 1.09, 1.67
    14: (1.5, 1.5),     # 1.00, 1.00
    15: (1.5, 1.5),     # 1.00, 1.00
    16: (1.7, 5),       # 1.07, 3.43
    17: (450, 15),      # 300, 10.0: no part is Brand#23 in MED BOX at SF 0.01 (0 rows)
    18: (4.3, 17),      # 2.86, 11.5: sum(l_quantity) > 300 per order, from a normal
                        # approximation; 2 orders at SF 0.01 (6 estimated), the semi join
                        # on them now below the joins
    19: (20, 1.5),      # 13.2, 1.00: 1 row; brand and container dampened, 'AIR REG'
                        # is no ship mode
    20: (19, 32),       # 12.5, 21.0: the grouped sum over lineitem is reduced to the parts
                        # named 'forest%' (the LIKE prefix estimated at 10%, ~1% actual)
    21: (9, 6),         # 5.85, 4.00
    22: (3.7, 1.5),     # 2.45, 1.00
}


@pytest.fixture(scope="module")
def analyzed_tpch(tpch_dir: Path):  # type: ignore[no-untyped-def]
    """A session of its own (the shared one stays on footer statistics) whose TPC-H tables
    were all analyzed."""
    import flowsql

    session = flowsql.connect()
    for name in TPCH_TABLES:
        session.sql(create_table_sql(name, tpch_dir))
        session.sql(f"ANALYZE TABLE {name}")
    return session


def test_every_query_has_bounds() -> None:
    assert sorted(QERROR_BOUNDS) == list(QUERY_NUMBERS)


@pytest.mark.parametrize("number", QUERY_NUMBERS)
def test_join_and_aggregate_estimates_within_bounds(number: int, analyzed_tpch) -> None:  # type: ignore[no-untyped-def]
    analysis = analyzed_tpch.sql("EXPLAIN ANALYZE " + load_query(number)).analysis
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
