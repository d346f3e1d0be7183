"""Result modes without a terminal: the changelog mode's lines, the table mode's fallback
when output is not a terminal, no pager for piped output, and the materialized result the
table view shows."""

from __future__ import annotations

import io

import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import FlowSQLError
from flowsql.shell.interpreter import Interpreter
from flowsql.shell.result_views import MaterializedResult

SOURCE = ("CREATE TABLE s (id BIGINT) WITH ('connector' = 'datagen', "
          "'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '5', "
          "'rows-per-second' = '0');")
QUERY = "SELECT id % 2 AS k, COUNT(*) AS n FROM s GROUP BY id % 2;"


def run(mode: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    with flowsql.connect(**{"execution.runtime-mode": "streaming",
                            "execution.batch-size": "2",
                            "sql-client.execution.result-mode": mode}) as session:
        interpreter = Interpreter(session, out=out, err=err)
        interpreter.handle(SOURCE)
        out.truncate(0)
        out.seek(0)
        interpreter.handle(QUERY)
    assert err.getvalue() == ""
    return out.getvalue()


def test_changelog_mode_prints_rows_in_flinks_shape() -> None:
    # ids 1,2 | 3,4 | 5 in batches of two: k=1 -> 1, 2, 3 rows; k=0 -> 1, 2 rows
    assert run("changelog") == ("+I[1, 1]\n+I[0, 1]\n"
                                "-U[1, 1]\n+U[1, 2]\n-U[0, 1]\n+U[0, 2]\n"
                                "-U[1, 2]\n+U[1, 3]\n"
                                "(8 changes)\n")


def test_tableau_mode_is_the_op_column_table() -> None:
    assert run("tableau") == ("op | k | n\n+I | 1 | 1\n+I | 0 | 1\n"
                              "-U | 1 | 1\n+U | 1 | 2\n-U | 0 | 1\n+U | 0 | 2\n"
                              "-U | 1 | 2\n+U | 1 | 3\n"
                              "(8 changes)\n")


def test_table_mode_without_a_terminal_prints_the_changes() -> None:
    assert run("table") == ("(the table result mode needs a terminal: showing the changes)\n"
                            + run("tableau"))


def test_the_setting_takes_only_the_three_modes() -> None:
    with flowsql.connect() as session:
        session.sql("SET 'execution.result-mode' = 'changelog'")
        assert session.settings["sql-client.execution.result-mode"] == "changelog"
        with pytest.raises(FlowSQLError, match="tableau"):
            session.sql("SET 'sql-client.execution.result-mode' = 'pretty'")


def test_a_long_batch_result_is_not_paged_when_piped() -> None:
    out = io.StringIO()
    with flowsql.connect() as session:
        Interpreter(session, out=out, err=io.StringIO(), max_rows=None).handle(
            "SELECT * FROM (VALUES " + ", ".join(f"({i})" for i in range(200)) + ") AS t(x);")
    lines = out.getvalue().split("\n")
    assert lines[:3] == ["  x", "---", "  0"]
    assert lines[202].startswith("200 rows in ")


def test_materialized_result_applies_retractions() -> None:
    schema = pa.schema([("k", pa.string()), ("n", pa.int64())])
    result = MaterializedResult(schema)
    result.apply(pa.table({"op": ["+I", "+I", "+I"], "k": ["a", "b", "b"], "n": [1, 1, 1]}))
    result.apply(pa.table({"op": ["-U", "+U", "-D"], "k": ["a", "a", "b"], "n": [1, 2, 1]}))
    # the update of a stays in a's place
    assert result.table().to_pylist() == [{"k": "a", "n": 2}, {"k": "b", "n": 1}]
    assert result.row_count == 2 and result.changes == 6
    assert result.table().schema == schema
    result.apply(pa.table({"op": ["-D", "+I", "-U", "+U"], "k": ["b", "c", "a", "a"],
                           "n": [1, 1, 2, 3]}))
    assert result.table().to_pylist() == [{"k": "a", "n": 3}, {"k": "c", "n": 1}]


def test_materialized_result_compacts_many_updates() -> None:
    schema = pa.schema([("k", pa.int64()), ("n", pa.int64())])
    result = MaterializedResult(schema)
    result.apply(pa.table({"op": ["+I"] * 3, "k": [1, 2, 3], "n": [0, 0, 0]}))
    for n in range(1, 300):
        result.apply(pa.table({"op": ["-D", "+I"], "k": [2, 2], "n": [n - 1, n]}))
    assert result.table().to_pylist() == [{"k": 1, "n": 0}, {"k": 3, "n": 0},
                                          {"k": 2, "n": 299}]
