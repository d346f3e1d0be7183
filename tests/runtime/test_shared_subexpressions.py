"""A deterministic sub-expression repeated by the expressions of one Project or one
aggregate is evaluated once per batch; a non-deterministic one once per occurrence. The
calls of a counting function are counted, and results are compared with DuckDB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import flowsql
from flowsql.planner import types as T
from flowsql.planner.expressions import Call, ColumnRef, Literal
from flowsql.planner.schema import Field, Schema
from flowsql.runtime.expressions import compile_exprs
from flowsql.runtime.expressions.shared_subexpressions import structural_key
from flowsql.tpch.verify import compare_tables
from tests.harness.tpch import TPCH_TABLES, create_table_sql

#: the batches each registered function was called with (their row counts)
CALLS: list[int] = []


@flowsql.udf(result_type="BIGINT")
def counted_double(x: pa.Array) -> pa.Array:
    CALLS.append(len(x))
    return pc.multiply(x, 2)


@pytest.fixture()
def calls() -> Iterator[list[int]]:
    CALLS.clear()
    yield CALLS
    CALLS.clear()


def _session(tpch_dir: Path, deterministic: bool = True) -> flowsql.Session:
    session = flowsql.connect(**{"parallelism.default": "1"})
    for name in TPCH_TABLES:
        session.sql(create_table_sql(name, tpch_dir))
    session.register_function(counted_double, "twice", deterministic=deterministic)
    return session


ONE_BATCH = "(VALUES (1, 10), (2, 20), (1, 30), (3, NULL)) AS t(k, v)"


def test_deterministic_function_used_twice_in_a_projection_runs_once(calls: list[int],
                                                                     tpch_dir: Path) -> None:
    session = _session(tpch_dir)
    rows = session.sql(f"SELECT twice(v) + 1 AS a, twice(v) * k AS b FROM {ONE_BATCH}"
                       ).to_arrow().to_pylist()
    assert rows == [{"a": 21, "b": 20}, {"a": 41, "b": 80}, {"a": 61, "b": 60},
                    {"a": None, "b": None}]
    assert calls == [4]


def test_deterministic_function_used_twice_in_aggregates_runs_once(calls: list[int],
                                                                   tpch_dir: Path) -> None:
    session = _session(tpch_dir)
    rows = session.sql(f"SELECT k, sum(twice(v)) AS s, max(twice(v) + k) AS m FROM {ONE_BATCH} "
                       "GROUP BY k ORDER BY k").to_arrow().to_pylist()
    assert rows == [{"k": 1, "s": 80, "m": 61}, {"k": 2, "s": 40, "m": 42},
                    {"k": 3, "s": None, "m": None}]
    assert calls == [4]


def test_repeated_inside_one_expression_runs_once(calls: list[int], tpch_dir: Path) -> None:
    session = _session(tpch_dir)
    rows = session.sql(f"SELECT CASE WHEN twice(v) > 30 THEN twice(v) ELSE -twice(v) END AS a "
                       f"FROM {ONE_BATCH}").to_arrow().to_pylist()
    assert rows == [{"a": -20}, {"a": 40}, {"a": 60}, {"a": None}]
    assert calls == [4]


def test_a_branch_failing_on_rows_it_never_selects_is_shared_correctly() -> None:
    """``7 % (k - 2)`` fails on the whole batch (k = 2), so each CASE evaluates it again on
    the rows that select it: a sub-batch, never answered with another batch's result."""
    session = flowsql.connect()
    rows = session.sql("""
        SELECT CASE WHEN k = 2 THEN 0 ELSE 7 % (k - 2) END AS a,
               CASE WHEN k = 2 THEN -1 ELSE 7 % (k - 2) * 10 END AS b,
               CASE WHEN k <> 2 THEN 7 % (k - 2) END + 7 % (k - 2 + 10) AS c
        FROM (VALUES (1), (2), (4), (5)) AS t(k)""").to_arrow().to_pylist()
    assert rows == [{"a": 0, "b": 0, "c": 7}, {"a": 0, "b": -1, "c": None},
                    {"a": 1, "b": 10, "c": 8}, {"a": 1, "b": 10, "c": 8}]


def test_non_deterministic_function_runs_for_each_occurrence(calls: list[int],
                                                             tpch_dir: Path) -> None:
    session = _session(tpch_dir, deterministic=False)
    session.sql(f"SELECT twice(v) + 1 AS a, twice(v) * k AS b FROM {ONE_BATCH}").to_arrow()
    assert calls == [4, 4]
    calls.clear()
    session.sql(f"SELECT k, sum(twice(v)) AS s, max(twice(v) + k) AS m FROM {ONE_BATCH} "
                "GROUP BY k").to_arrow()
    assert calls == [4, 4]


def test_every_batch_gets_its_own_result() -> None:
    """The remembered value belongs to one batch: the next batch computes afresh."""
    schema = Schema((Field(1, "x", T.INT64),))
    x = ColumnRef(1, "x", T.INT64)
    square = Call("multiply", (x, x), T.INT64)
    evaluate = compile_exprs([Call("add", (square, Literal(1, T.INT64)), T.INT64),
                              Call("negate", (square,), T.INT64)], schema)
    for values in ([1, 2, 3], [4, None], [5]):
        batch = pa.record_batch([pa.array(values, pa.int64())], names=["x"])
        squares = [None if v is None else v * v for v in values]
        assert [a.to_pylist() for a in evaluate(batch)] == [
            [None if s is None else s + 1 for s in squares],
            [None if s is None else -s for s in squares]]


def test_literals_differing_only_in_what_equality_forgets_are_not_shared() -> None:
    x = ColumnRef(1, "x", T.FLOAT64)
    assert structural_key(Literal(0.0, T.FLOAT64)) != structural_key(Literal(-0.0, T.FLOAT64))
    assert structural_key(Call("multiply", (x, Literal(0.0, T.FLOAT64)), T.FLOAT64)) != \
        structural_key(Call("multiply", (x, Literal(-0.0, T.FLOAT64)), T.FLOAT64))
    assert structural_key(Call("multiply", (x, x), T.FLOAT64)) == \
        structural_key(Call("multiply", (ColumnRef(1, "x", T.FLOAT64),) * 2, T.FLOAT64))


@pytest.mark.parametrize("sql", [
    # Q1's shape: the discounted price inside another aggregate's argument
    """SELECT l_returnflag, l_linestatus, sum(l_extendedprice * (1 - l_discount)) AS d,
              sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS c,
              avg(l_extendedprice * (1 - l_discount)) AS a
       FROM lineitem GROUP BY l_returnflag, l_linestatus ORDER BY 1, 2""",
    # a CASE evaluates its branch on the rows that reach it: a sub-batch of the batch
    """SELECT l_orderkey, l_linenumber,
              CASE WHEN l_quantity > 25 THEN l_quantity * l_discount ELSE 0 END AS big,
              l_quantity * l_discount AS all_rows,
              CASE WHEN l_quantity <= 25 THEN l_quantity * l_discount END AS small
       FROM lineitem ORDER BY 1, 2""",
])
def test_results_match_duckdb(sql: str, tpch_dir: Path,
                              duckdb_tpch: duckdb.DuckDBPyConnection) -> None:
    actual = _session(tpch_dir).sql(sql).to_arrow()
    assert compare_tables(actual, duckdb_tpch.sql(sql).to_arrow_table(), ordered=True) == []
