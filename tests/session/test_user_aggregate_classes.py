"""Class-form user aggregates (create_accumulator / accumulate / merge / retract /
get_value) through the session in batch mode: registration, results at parallelism 1 and
2 against DuckDB, the partial/final split the search chooses for an aggregate with
``merge`` (and never for one without), and errors naming the function and the group."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import CatalogError, ExecutionError
from flowsql.planner.udf import AGGREGATE
from tests.harness.tpch import TPCH_TABLES
from tests.udfs import aggregates
from tests.udfs.data import write_rows

CLASSES = {"my_mean": "Mean", "my_range": "Range", "my_collect": "Collect",
           "fails_on_nine": "FailsOnNine", "keeps_a_set": "KeepsASet"}


def _register(session: flowsql.Session) -> None:
    for name, cls in CLASSES.items():
        session.sql(f"CREATE FUNCTION {name} AS 'tests.udfs.aggregates.{cls}'")


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    def rounded(v: object) -> object:
        return round(v, 9) if isinstance(v, float) else v
    return sorted((tuple(rounded(v) for v in r.values()) for r in table.to_pylist()),
                  key=lambda r: tuple((v is None, v) for v in r))


@pytest.fixture(scope="module")
def rows_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_rows(tmp_path_factory.mktemp("udaf"))


@pytest.fixture(scope="module")
def duck(rows_dir: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{rows_dir}/*.parquet')")
    yield con
    con.close()


@pytest.fixture(scope="module", params=[1, 2], ids=["parallelism1", "parallelism2"])
def session(request: pytest.FixtureRequest, rows_dir: Path) -> Iterator[flowsql.Session]:
    s = flowsql.connect(parallelism=request.param)
    s.set("optimizer.small-query-on-one-subtask", "false")
    s.sql(f"CREATE TABLE t WITH ('path' = '{rows_dir}', 'format' = 'parquet')")
    _register(s)
    yield s
    s.close()


def _same(session: flowsql.Session, duck: duckdb.DuckDBPyConnection, ours: str,
          oracle: str) -> None:
    assert _rows(session.sql(ours).to_arrow()) == _rows(duck.sql(oracle).to_arrow_table())


# -- registration -----------------------------------------------------------------------

def test_registration_records_the_optional_methods() -> None:
    s = flowsql.connect()
    mean = s.register_function(aggregates.Mean, "my_mean")
    assert (mean.kind, mean.path, mean.accumulator, mean.mergeable, mean.retractable) == (
        AGGREGATE, "tests.udfs.aggregates.Mean", True, True, True)
    assert mean.result_type == pa.float64() and mean.arg_types == (pa.float64(),)
    extent = s.register_function(aggregates.Range, "my_range")
    assert (extent.accumulator, extent.mergeable, extent.retractable) == (True, True, False)
    collect = s.register_function(aggregates.Collect, "my_collect")
    assert (collect.accumulator, collect.mergeable, collect.retractable) == (True, False, True)
    spread = s.register_function(aggregates.spread)
    assert (spread.accumulator, spread.mergeable, spread.retractable) == (False, False, False)
    with pytest.raises(CatalogError, match=r"aggregate class 'tests.udfs.aggregates.NoValue' "
                                           r"has no method get_value\(\)"):
        s.sql("CREATE FUNCTION no_value AS 'tests.udfs.aggregates.NoValue'")


def test_arguments_are_checked_against_accumulate() -> None:
    s = flowsql.connect()
    _register(s)
    with pytest.raises(flowsql.errors.BindError, match="my_range.* does not take 2 arguments"):
        s.sql("SELECT my_range(a, a) FROM (VALUES (1)) v(a)")


# -- batch results ----------------------------------------------------------------------

def test_class_aggregates_by_group(session: flowsql.Session,
                                   duck: duckdb.DuckDBPyConnection) -> None:
    _same(session, duck,
          "SELECT k, my_mean(w) AS m, my_range(v) AS r, my_collect(s) AS c, count(*) AS n, "
          "sum(v) AS total FROM t GROUP BY k",
          "SELECT k, avg(w), max(v) - min(v), coalesce(string_agg(s, '|' ORDER BY s), ''), "
          "count(*), sum(v)::BIGINT FROM t GROUP BY k")


def test_class_aggregates_with_filter_having_and_over_the_whole_input(
        session: flowsql.Session, duck: duckdb.DuckDBPyConnection) -> None:
    _same(session, duck,
          "SELECT k, my_mean(w) FILTER (WHERE v > 3) AS m FROM t GROUP BY k "
          "HAVING my_range(v) > 2",
          "SELECT k, avg(w) FILTER (WHERE v > 3) FROM t GROUP BY k HAVING max(v) - min(v) > 2")
    _same(session, duck, "SELECT my_mean(w), my_range(v), my_collect(k), count(*) FROM t",
          "SELECT avg(w), max(v) - min(v), string_agg(k, '|' ORDER BY k), count(*) FROM t")
    # over no rows: get_value of a fresh accumulator (accumulate is not called)
    _same(session, duck, "SELECT my_mean(w), my_range(v), my_collect(s) FROM t WHERE v > 100",
          "SELECT NULL::DOUBLE, NULL::BIGINT, ''")


def test_a_failing_method_names_the_function_and_the_group(session: flowsql.Session) -> None:
    with pytest.raises(ExecutionError, match=r"aggregate function fails_on_nine failed in "
                                             r"accumulate\(\) on the group \(k = 'a'\), "
                                             r"\d rows: ValueError: nine"):
        session.sql("SELECT k, fails_on_nine(v) FROM t GROUP BY k")


# -- partial / final split ----------------------------------------------------------------

@pytest.fixture(scope="module")
def tpch(tpch_dir: Path) -> Iterator[flowsql.Session]:
    s = flowsql.connect(parallelism=2)
    s.set("optimizer.small-query-on-one-subtask", "false")
    for name in TPCH_TABLES:
        s.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
    _register(s)
    yield s
    s.close()


def _plan(session: flowsql.Session, query: str) -> str:
    text = "\n".join(str(v) for r in session.sql("EXPLAIN " + query).to_arrow().to_pylist()
                     for v in r.values())
    return text.split("== Physical Plan ==")[1]


SPLIT = ("SELECT l_returnflag, my_mean(l_discount) AS m, my_range(l_linenumber) AS r, "
         "count(*) AS c FROM lineitem GROUP BY l_returnflag")


def test_an_aggregate_with_merge_is_split_into_partial_and_final(
        tpch: flowsql.Session, tpch_dir: Path) -> None:
    plan = _plan(tpch, SPLIT)
    final, partial = plan.index("my_mean[final]"), plan.index("my_mean[partial]")
    assert final < plan.index("Exchange[hash]") < partial  # final above, partial below
    assert "my_range[partial](l_linenumber)" in plan and "sum(count(*))" in plan
    got = _rows(tpch.sql(SPLIT).to_arrow())
    expected = duckdb.sql(
        f"SELECT l_returnflag, avg(l_discount::DOUBLE), max(l_linenumber) - min(l_linenumber), "
        f"count(*) FROM '{tpch_dir / 'lineitem.parquet'}' GROUP BY l_returnflag").to_arrow_table()
    assert got == _rows(expected)
    # a global aggregate gathers the partial accumulators
    plan = _plan(tpch, "SELECT my_mean(l_discount) FROM lineitem")
    assert plan.index("my_mean[final]") < plan.index("Exchange[gather]") < plan.index(
        "my_mean[partial]")
    got = tpch.sql("SELECT my_mean(l_discount), my_range(l_linenumber) FROM lineitem").to_arrow()
    expected = duckdb.sql(f"SELECT avg(l_discount::DOUBLE), max(l_linenumber) - "
                          f"min(l_linenumber) FROM '{tpch_dir / 'lineitem.parquet'}'").to_arrow_table()
    assert _rows(got) == _rows(expected)


def test_an_aggregate_without_merge_is_never_split(tpch: flowsql.Session) -> None:
    plan = _plan(tpch, "SELECT l_returnflag, my_collect(l_linestatus), count(*) FROM lineitem "
                       "GROUP BY l_returnflag")
    assert "[partial]" not in plan and "partial" not in plan.lower().replace("partial/", "")
    assert "my_collect(l_linestatus)" in plan and "Exchange[hash]" in plan


def test_an_accumulator_that_is_not_json_data_is_an_error_naming_the_function(
        tpch: flowsql.Session) -> None:
    with pytest.raises(ExecutionError, match=r"aggregate function keeps_a_set: the "
                                             r"accumulator of the group \(l_returnflag = "
                                             r"'\w'\) is not JSON data"):
        tpch.sql("SELECT l_returnflag, keeps_a_set(l_linenumber) FROM lineitem "
                 "GROUP BY l_returnflag")
