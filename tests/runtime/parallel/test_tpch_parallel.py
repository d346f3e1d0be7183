"""All 22 TPC-H queries give DuckDB's answers when run on worker processes.

Two configurations: parallelism 2 with a tiny broadcast threshold (joins hash-partition both
sides, so shuffles and co-partitioning are exercised) and parallelism 4 with the default
threshold (the small sides of joins are broadcast, as at SF 0.01 most are).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import flowsql
from flowsql.session import Session
from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from flowsql.tpch.verify import compare_tables, is_ordered_query
from tests.harness.tpch import TPCH_TABLES

CONFIGURATIONS = {"p2-hash-joins": (2, "100"), "p4-broadcast-joins": (4, "100000")}


@pytest.fixture(scope="module", params=sorted(CONFIGURATIONS))
def parallel_session(request: pytest.FixtureRequest, tpch_dir: Path) -> Iterator[Session]:
    parallelism, threshold = CONFIGURATIONS[request.param]
    session = flowsql.connect(parallelism=parallelism)
    session.set("optimizer.broadcast-threshold-rows", threshold)
    # SF 0.01 is small enough to run on one subtask: plan for the workers regardless
    session.set("optimizer.small-query-on-one-subtask", "false")
    for name in TPCH_TABLES:
        session.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
    yield session
    session.close()


@pytest.mark.parametrize("number", QUERY_NUMBERS)
def test_tpch_query_matches_duckdb(parallel_session: Session, duckdb_tpch, number: int  # type: ignore[no-untyped-def]
                                   ) -> None:
    sql = load_query(number)
    result = parallel_session.sql(sql)
    assert "Exchange[gather]" in result.explain()
    expected = duckdb_tpch.sql(sql).to_arrow_table()
    assert compare_tables(result.to_arrow(), expected, is_ordered_query(sql)) == []
