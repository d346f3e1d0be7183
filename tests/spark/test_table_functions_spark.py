"""LATERAL TABLE(f(x)) on the Spark engine (mapInArrow in Spark's Python workers, which
import the function by its path) gives DuckDB's rows, CROSS and LEFT forms."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

import flowsql
from flowsql.planner.catalog import TableEntry
from tests.harness.operators import assert_rows
from tests.harness.spark import SPARK_TEST_SETTINGS
from tests.udfs import tables as samples


@pytest.fixture(scope="module")
def session(spark, tables: dict[str, TableEntry]  # type: ignore[no-untyped-def]
            ) -> Iterator[flowsql.Session]:
    session = flowsql.connect(engine="spark", **SPARK_TEST_SETTINGS)
    session.sql(f"CREATE TABLE t WITH ('path' = '{tables['t'].path}')")
    session.register_function(samples.series)
    session.register_function(samples.words)
    yield session
    session.close()


@pytest.mark.parametrize(("query", "oracle"), [
    ("SELECT id, k, i, down FROM t, LATERAL TABLE(series(k)) AS T(i, down)",
     "SELECT id, k, i, k - i + 1 FROM t, generate_series(1, k) AS g(i)"),
    ("SELECT id, a FROM t LEFT JOIN LATERAL TABLE(series(k)) AS T(a) ON TRUE WHERE id < 9",
     "SELECT id, i FROM t LEFT JOIN LATERAL (SELECT * FROM generate_series(1, k)) AS g(i) "
     "ON TRUE WHERE id < 9"),
    ("SELECT grp, w, len FROM t CROSS JOIN LATERAL TABLE(words(s))",
     "SELECT grp, w, length(w) FROM t, unnest(string_split(s, ' ')) AS u(w) WHERE w <> ''"),
])
def test_spark_matches_duckdb(query: str, oracle: str, session: flowsql.Session,
                              duck: duckdb.DuckDBPyConnection) -> None:
    assert_rows(session.sql(query).to_arrow(), duck.sql(oracle).to_arrow_table())
