"""Python UDFs through the session: registration (decorator, register_function, CREATE /
DROP FUNCTION, SHOW FUNCTIONS), binding errors, and scalar and aggregate functions in
batch at parallelism 1 and 2, compared with DuckDB computing the same values."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import BindError, CatalogError, ExecutionError, SqlSyntaxError
from flowsql.planner.udf import AGGREGATE, SCALAR
from tests.udfs import aggregates, scalars
from tests.udfs.data import write_rows

SCALARS = ("times_two", "weighted", "shout", "is_even", "add", "next_id", "fails_on_seven",
           "wrong_length", "wrong_type")
AGGREGATES = ("weighted_avg", "spread", "joined", "row_count", "fails_on_big_group")


def _register(session: flowsql.Session) -> None:
    for name in SCALARS:
        session.sql(f"CREATE TEMPORARY FUNCTION {name} AS 'tests.udfs.scalars.{name}' "
                    "LANGUAGE PYTHON")
    for name in AGGREGATES:
        session.sql(f"CREATE FUNCTION {name} AS 'tests.udfs.aggregates.{name}'")


@pytest.fixture(scope="module")
def rows_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_rows(tmp_path_factory.mktemp("udf"))


@pytest.fixture(scope="module")
def duck(rows_dir: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{rows_dir}/*.parquet')")
    yield con
    con.close()


@pytest.fixture(scope="module", params=[1, 2], ids=["parallelism1", "parallelism2"])
def session(request: pytest.FixtureRequest, rows_dir: Path) -> Iterator[flowsql.Session]:
    s = flowsql.connect(parallelism=request.param)
    s.sql(f"CREATE TABLE t WITH ('path' = '{rows_dir}', 'format' = 'parquet')")
    _register(s)
    yield s
    s.close()


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted((tuple(r.values()) for r in table.to_pylist()),
                  key=lambda r: tuple((v is None, v) for v in r))


def _same(session: flowsql.Session, duck: duckdb.DuckDBPyConnection, ours: str,
          oracle: str) -> None:
    mine = _rows(session.sql(ours).to_arrow())
    theirs = _rows(duck.sql(oracle).to_arrow_table())
    assert mine == theirs


# -- registration -----------------------------------------------------------------------

def test_register_function_uses_the_decorator_and_keyword_hints_override_it() -> None:
    s = flowsql.connect()
    function = s.register_function(scalars.weighted, "wt", cost_per_row=2.5)
    assert (function.name, function.path, function.kind) == ("wt", "tests.udfs.scalars.weighted",
                                                             SCALAR)
    assert function.result_type == pa.float64()
    assert function.arg_types == (pa.float64(), pa.float64())
    assert function.hints.cost_per_row == 2.5 and function.hints.deterministic
    assert s.register_function(scalars.is_even).hints.selectivity == 0.1
    assert s.register_function(aggregates.spread).kind == AGGREGATE
    with pytest.raises(CatalogError, match="function 'wt' already exists"):
        s.register_function(scalars.weighted, "wt")
    assert s.register_function(scalars.times_two, "wt", replace=True).path.endswith("times_two")
    with pytest.raises(CatalogError, match="unknown hint"):
        s.register_function(scalars.add, speed=3)
    with pytest.raises(CatalogError, match="selectivity must be within"):
        s.register_function(scalars.add, selectivity=2.0)


def _local() -> None:  # pragma: no cover - never called, only registered
    pass


def test_functions_that_workers_cannot_import_are_refused_at_registration() -> None:
    s = flowsql.connect()

    @flowsql.udf(result_type="BIGINT")
    def nested(x: pa.Array) -> pa.Array:  # pragma: no cover - never called
        return x

    with pytest.raises(CatalogError, match="inside another function"):
        s.register_function(nested)
    with pytest.raises(CatalogError, match="lambda"):
        s.register_function(flowsql.udf(result_type="BIGINT")(lambda x: x))
    main_function = flowsql.udf(result_type="BIGINT")(_local)
    main_function.__module__ = "__main__"
    with pytest.raises(CatalogError, match="defined in __main__"):
        s.register_function(main_function)
    with pytest.raises(CatalogError, match="not declared as a flowsql function"):
        s.register_function(scalars.not_decorated)


@pytest.mark.parametrize(("statement", "error", "message"), [
    ("CREATE FUNCTION f AS 'tests.udfs.missing.f'", CatalogError,
     "function 'tests.udfs.missing.f': module 'tests.udfs.missing' not found"),
    ("CREATE FUNCTION f AS 'tests.udfs.scalars.missing'", CatalogError,
     "module 'tests.udfs.scalars' has no attribute 'missing'"),
    ("CREATE FUNCTION f AS 'tests.udfs.scalars.not_decorated'", CatalogError,
     "'tests.udfs.scalars.not_decorated' is not declared as a flowsql function"),
    ("CREATE FUNCTION f AS 'tests.udfs.scalars.NOT_A_FUNCTION'", CatalogError,
     "'tests.udfs.scalars.NOT_A_FUNCTION' is a int, not a function"),
    ("CREATE FUNCTION f AS 'nodots'", CatalogError, "not of the form 'module.function'"),
    ("CREATE FUNCTION f AS 'tests.udfs.scalars.times_two' LANGUAGE JAVA", CatalogError,
     "LANGUAGE JAVA is not supported"),
    ("CREATE FUNCTION f AS 'tests.udfs.scalars.times_two' LANGUAGE SCALA", CatalogError,
     "LANGUAGE SCALA is not supported"),
    ("CREATE FUNCTION upper AS 'tests.udfs.scalars.times_two'", CatalogError,
     "'upper' is a built-in function"),
    ("CREATE FUNCTION f", SqlSyntaxError, "expected AS '<module.function>'"),
    ("CREATE FUNCTION f AS tests", SqlSyntaxError, "expected the function's import path"),
    ("DROP FUNCTION nope", CatalogError, "function 'nope' does not exist"),
])
def test_create_and_drop_function_errors(statement: str, error: type[Exception],
                                         message: str) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        flowsql.connect().sql(statement)


def test_create_drop_and_show_functions() -> None:
    s = flowsql.connect()
    s.sql("CREATE TEMPORARY SYSTEM FUNCTION IF NOT EXISTS dbl AS "
          "'tests.udfs.scalars.times_two' LANGUAGE PYTHON")
    s.sql("CREATE FUNCTION IF NOT EXISTS dbl AS 'tests.udfs.scalars.missing'")  # kept
    s.sql("create function Spread as 'tests.udfs.aggregates.spread'")
    with pytest.raises(CatalogError, match="function 'DBL' already exists"):
        s.sql("CREATE FUNCTION DBL AS 'tests.udfs.scalars.add'")
    user = s.sql("SHOW USER FUNCTIONS").to_arrow().to_pylist()
    assert user == [
        {"function name": "dbl", "kind": "scalar", "path": "tests.udfs.scalars.times_two",
         "result type": "BIGINT"},
        {"function name": "Spread", "kind": "aggregate",
         "path": "tests.udfs.aggregates.spread", "result type": "BIGINT"}]
    everything = s.sql("SHOW FUNCTIONS").to_arrow()
    names = everything.column("function name").to_pylist()
    assert {"upper", "sum", "row_number", "dbl", "Spread"} <= set(names)
    assert everything.num_rows == len(set(names))
    assert s.sql("SELECT dbl(21)").to_arrow().column(0).to_pylist() == [42]
    s.sql("DROP TEMPORARY SYSTEM FUNCTION dbl")
    s.sql("DROP FUNCTION IF EXISTS dbl")
    with pytest.raises(BindError, match="unknown function 'dbl'"):
        s.sql("SELECT dbl(21)")
    assert [r["function name"] for r in s.sql("SHOW USER FUNCTIONS").to_arrow().to_pylist()] \
        == ["Spread"]


def test_calls_are_checked_against_the_declaration_with_their_position() -> None:
    s = flowsql.connect()
    _register(s)
    with pytest.raises(BindError, match=r"function weighted takes 2 arguments, not 1 "
                                        r"\(line 2, col 10\)"):
        s.sql("SELECT\n  weighted(1.0) FROM (VALUES (1)) v(a)")
    with pytest.raises(BindError, match=r"function times_two\(x: .*\) -> .* does not take 2 "
                                        r"arguments \(line 1, col 18\)"):
        s.sql("SELECT times_two(a, a) FROM (VALUES (1)) v(a)")
    with pytest.raises(BindError, match="weighted: argument 1 must be DOUBLE, not DATE"):
        s.sql("SELECT weighted(DATE '2024-01-01', 1.0)")
    with pytest.raises(BindError, match="DISTINCT is not supported"):
        s.sql("SELECT spread(DISTINCT a) FROM (VALUES (1)) v(a)")
    with pytest.raises(BindError, match="aggregate calls cannot be nested"):
        s.sql("SELECT spread(spread(a)) FROM (VALUES (1)) v(a)")
    # an integer argument is cast to the declared DOUBLE, as for a built-in
    assert s.sql("SELECT weighted(3, 2)").to_arrow().column(0).to_pylist() == [6.0]


# -- scalar functions -------------------------------------------------------------------

def test_scalar_functions_in_select_and_where(session: flowsql.Session,
                                              duck: duckdb.DuckDBPyConnection) -> None:
    _same(session, duck,
          "SELECT k, times_two(v) AS d, weighted(v, w) AS p, shout(s) AS u, add(v, 10) AS a, "
          "add(1, 2) AS c FROM t WHERE is_even(v) OR v > 4",
          "SELECT k, v * 2, v * w, upper(s) || '!', v + 10, 3 FROM t "
          "WHERE v % 2 = 0 OR v > 4")


def test_scalar_function_over_an_aggregate_and_in_group_by(
        session: flowsql.Session, duck: duckdb.DuckDBPyConnection) -> None:
    _same(session, duck,
          "SELECT times_two(v) AS d, count(*) AS n, times_two(sum(v)) AS s2 FROM t "
          "GROUP BY times_two(v)",
          "SELECT v * 2, count(*), sum(v) * 2 FROM t GROUP BY v * 2")


def test_non_deterministic_function_runs_once_per_row() -> None:
    """The filter over the non-deterministic column stays above the projection (pushed
    down, it would call the function a second time and filter on other values)."""
    s = flowsql.connect()
    _register(s)
    table = s.sql("SELECT n FROM (SELECT next_id(a) AS n FROM (VALUES (1), (2), (3), (4)) "
                  "v(a)) WHERE n % 2 = 0").to_arrow()
    ids = table.column(0).to_pylist()
    assert len(ids) == 2 and all(i % 2 == 0 for i in ids) and ids[1] == ids[0] + 2


def test_a_failing_function_names_itself_and_the_row(session: flowsql.Session) -> None:
    # the row is shown by its arguments, as written in SQL
    with pytest.raises(ExecutionError, match=r"function fails_on_seven failed on the input "
                                             r"row with \(v \+ 4\) = 7: ValueError: seven is "
                                             r"not allowed"):
        session.sql("SELECT fails_on_seven(v + 4) FROM t WHERE k = 'a'")


def test_a_wrong_result_is_an_error_naming_the_function(session: flowsql.Session) -> None:
    with pytest.raises(ExecutionError, match=r"function wrong_length returned 1 values for "
                                             r"\d+ input rows"):
        session.sql("SELECT wrong_length(v) FROM t")
    with pytest.raises(ExecutionError, match="function wrong_type returned VARCHAR values, "
                                             "but declares BIGINT"):
        session.sql("SELECT wrong_type(v) FROM t")


def test_a_constant_argument_reaches_the_function_as_a_scalar() -> None:
    s = flowsql.connect()
    _register(s)
    got = s.sql("SELECT add(a, 100) AS r FROM (VALUES (1), (2)) v(a)").to_arrow()
    assert got.column(0).to_pylist() == [101, 102]


# -- aggregate functions ----------------------------------------------------------------

def test_aggregates_by_group(session: flowsql.Session,
                             duck: duckdb.DuckDBPyConnection) -> None:
    _same(session, duck,
          "SELECT k, weighted_avg(v, w) AS wa, spread(v) AS sp, joined(s) AS j, "
          "row_count(v) AS n, sum(v) AS total, count(*) AS c FROM t GROUP BY k",
          "SELECT k, sum(v * w) FILTER (WHERE v IS NOT NULL AND w IS NOT NULL) / "
          "  nullif(sum(w) FILTER (WHERE v IS NOT NULL AND w IS NOT NULL), 0), "
          "max(v) - min(v), string_agg(s, '|' ORDER BY s), count(*) AS n, sum(v)::BIGINT, count(*) AS c "
          "FROM t GROUP BY k")


def test_aggregate_with_filter_having_and_over_the_whole_input(
        session: flowsql.Session, duck: duckdb.DuckDBPyConnection) -> None:
    _same(session, duck,
          "SELECT k, row_count(v) FILTER (WHERE v > 3) AS n FROM t GROUP BY k "
          "HAVING spread(v) > 2",
          "SELECT k, count(*) FILTER (WHERE v > 3) FROM t GROUP BY k HAVING max(v) - min(v) > 2")
    _same(session, duck, "SELECT spread(v), joined(k), count(*) FROM t",
          "SELECT max(v) - min(v), string_agg(k, '|' ORDER BY k), count(*) FROM t")
    # over no rows the function is asked what it gives (spread: NULL, row_count: 0)
    _same(session, duck, "SELECT spread(v), row_count(v) FROM t WHERE v > 100",
          "SELECT NULL::BIGINT, 0")


def test_a_failing_aggregate_names_itself_and_the_group(session: flowsql.Session) -> None:
    with pytest.raises(ExecutionError, match=r"aggregate function fails_on_big_group failed "
                                             r"on the group \(k = 'a'\) \(5 rows\): "
                                             r"RuntimeError: too many rows"):
        session.sql("SELECT k, fails_on_big_group(v) FROM t WHERE k = 'a' GROUP BY k")
