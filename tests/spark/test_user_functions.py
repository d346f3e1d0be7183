"""Python UDFs on Spark (Arrow UDFs, grouped-aggregate Arrow UDFs) against DuckDB: the
Python workers import the functions by path from ``tests.udfs``."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import ExecutionError, PlanError
from flowsql.planner.catalog import TableEntry
from tests.harness.spark import SPARK_TEST_SETTINGS


@pytest.fixture(scope="module")
def session(spark, tables: dict[str, TableEntry]) -> Iterator[flowsql.Session]:  # type: ignore[no-untyped-def]
    s = flowsql.connect(engine="spark", **SPARK_TEST_SETTINGS)
    s.sql(f"CREATE TABLE t WITH ('path' = '{tables['t'].path}', 'format' = 'parquet')")
    for name in ("times_two", "add", "shout", "fails_on_seven", "wrong_length"):
        s.sql(f"CREATE FUNCTION {name} AS 'tests.udfs.scalars.{name}'")
    for name in ("spread", "joined", "weighted_avg"):
        s.sql(f"CREATE FUNCTION {name} AS 'tests.udfs.aggregates.{name}'")
    for name, cls in (("my_mean", "Mean"), ("my_range", "Range"), ("my_collect", "Collect")):
        s.sql(f"CREATE FUNCTION {name} AS 'tests.udfs.aggregates.{cls}'")
    yield s
    s.close()


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()),
                  key=lambda r: tuple((v is None, v) for v in r))


def _same(session: flowsql.Session, duck, ours: str, oracle: str) -> None:  # type: ignore[no-untyped-def]
    assert _rows(session.sql(ours).to_arrow()) == _rows(duck.sql(oracle).to_arrow_table())


def test_scalar_functions(session: flowsql.Session, duck) -> None:  # type: ignore[no-untyped-def]
    _same(session, duck,
          "SELECT id, times_two(k) AS d, add(k, 100) AS a, shout(grp) AS g FROM t "
          "WHERE times_two(k) > 2",
          "SELECT id, k * 2, k + 100, upper(grp) || '!' FROM t WHERE k * 2 > 2")


def test_aggregate_functions(session: flowsql.Session, duck) -> None:  # type: ignore[no-untyped-def]
    _same(session, duck,
          "SELECT grp, spread(k) AS sp, joined(grp) AS j, weighted_avg(qty, x) AS w "
          "FROM t GROUP BY grp",
          "SELECT grp, max(k) - min(k), coalesce(string_agg(grp, '|'), ''), "
          "sum(qty * x) FILTER (WHERE qty IS NOT NULL AND x IS NOT NULL) / nullif(sum(x) "
          "FILTER (WHERE qty IS NOT NULL AND x IS NOT NULL), 0) FROM t GROUP BY grp")


def test_class_form_aggregates(session: flowsql.Session, duck) -> None:  # type: ignore[no-untyped-def]
    # with and without merge/retract alike: one accumulator per group
    _same(session, duck,
          "SELECT grp, my_mean(x) AS m, my_range(k) AS r, my_collect(grp) AS c "
          "FROM t GROUP BY grp",
          "SELECT grp, avg(x), max(k) - min(k), coalesce(string_agg(grp, '|'), '') "
          "FROM t GROUP BY grp")


def test_user_and_built_in_aggregates_cannot_share_a_group_by_on_spark(
        session: flowsql.Session) -> None:
    with pytest.raises(PlanError, match="cannot compute the user-defined aggregate spread "
                                        "together with built-in aggregates"):
        session.sql("SELECT grp, spread(k), count(*) FROM t GROUP BY grp")


def test_a_failing_function_names_itself_and_the_row(session: flowsql.Session) -> None:
    with pytest.raises(ExecutionError, match=r"function fails_on_seven failed on the input "
                                             r"row with arguments \(7\): ValueError: seven"):
        session.sql("SELECT fails_on_seven(k + 4) FROM t")
    with pytest.raises(ExecutionError, match="function wrong_length returned 1 values"):
        session.sql("SELECT wrong_length(k) FROM t")


def test_a_user_aggregate_over_a_window_is_refused_on_spark(session: flowsql.Session) -> None:
    with pytest.raises(PlanError, match=r"without FILTER and OVER only \(in my_mean\(x\)\)"):
        session.sql("SELECT grp, my_mean(x) OVER (PARTITION BY grp) FROM t")
