"""Expressions nested MAX_EXPRESSION_NESTING levels deep parse, bind, optimize and run
(Python's default recursion limit ended 49 parentheses or 329 added terms in a
RecursionError); far deeper ones fail with an error saying the limit, never a traceback."""

from __future__ import annotations

import sys

import duckdb
import pytest

import flowsql
from flowsql.errors import FlowSQLError, SqlSyntaxError
from flowsql.planner.nesting import MAX_EXPRESSION_NESTING

N = MAX_EXPRESSION_NESTING
VALUES = "(VALUES (1), (2)) AS t(x)"
QUERIES = {
    "parentheses": "SELECT " + "(" * N + "1" + ")" * N + " AS v",
    "parenthesized column": "SELECT " + "(" * N + "x" + ")" * N + f" AS v FROM {VALUES}",
    "added literals": "SELECT " + " + ".join(["1"] * N) + " AS v",
    "added columns": "SELECT " + " + ".join(["x"] * N) + f" AS v FROM {VALUES}",
    "nested CASE": "SELECT " + "CASE WHEN x > 0 THEN " * (N // 4) + "x"
                   + " END" * (N // 4) + f" AS v FROM {VALUES}",
    "ANDed predicates": f"SELECT x AS v FROM {VALUES} WHERE " + " AND ".join(["x > 1"] * N),
}


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("name", list(QUERIES))
def test_expressions_nested_to_the_documented_depth_match_duckdb(name: str,
                                                                 parallelism: int) -> None:
    sql = QUERIES[name]
    limit = sys.getrecursionlimit()
    rows = flowsql.connect(parallelism=parallelism).sql(sql).to_arrow()
    assert sys.getrecursionlimit() == limit
    expected = sorted(duckdb.sql(sql).fetchall())
    assert sorted((row["v"],) for row in rows.to_pylist()) == expected
    assert expected  # the oracle returned rows: the comparison is not vacuous


def test_deeper_nesting_is_an_error_saying_the_limit() -> None:
    limit = sys.getrecursionlimit()
    depth = 10 * N
    with pytest.raises(SqlSyntaxError) as error:
        flowsql.connect().sql("SELECT " + "(" * depth + "1" + ")" * depth)
    assert error.value.bare_message == (
        f"expression nested too deeply to parse: at most {N} levels of parentheses, "
        "operators, CASE or function calls are supported")
    assert (error.value.line, error.value.col) == (1, 1)
    with pytest.raises(FlowSQLError, match=f"nested too deeply to bind: at most {N} levels"):
        flowsql.connect().sql("SELECT " + " + ".join(["x"] * 20 * N) + f" FROM {VALUES}")
    assert sys.getrecursionlimit() == limit
