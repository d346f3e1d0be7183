"""LATERAL TABLE(f(x)) from SQL to rows: batch (parallelism 1 and 2) and streaming, CROSS
and LEFT forms, against DuckDB's generate_series / unnest equivalents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import BindError, ExecutionError, PlanError
from tests.harness.operators import assert_rows
from tests.udfs import tables

DATA = pa.table({
    "k": pa.array(range(1, 41), pa.int64()),
    "n": pa.array([None if i % 7 == 3 else (i % 5) - 1 for i in range(40)], pa.int64()),
    "s": pa.array([None if i % 9 == 4 else " ".join(["w"] * (i % 4) + [f"x{i}"] * (i % 3))
                   for i in range(40)]),
})

#: (flowsql query, the DuckDB query giving the same rows)
QUERIES = {
    "comma": ("SELECT k, n, i, down FROM t, LATERAL TABLE(series(t.n)) AS T(i, down)",
              "SELECT k, n, i, n - i + 1 FROM t, generate_series(1, n) AS g(i)"),
    "cross": ("SELECT k, i FROM t CROSS JOIN LATERAL TABLE(series(n)) WHERE k > 5",
              "SELECT k, i FROM t, generate_series(1, n) AS g(i) WHERE k > 5"),
    "left": ("SELECT k, a FROM t LEFT JOIN LATERAL TABLE(series(n)) AS T(a) ON TRUE",
             "SELECT k, i FROM t LEFT JOIN LATERAL (SELECT * FROM generate_series(1, n)) "
             "AS g(i) ON TRUE"),
    "words": ("SELECT k, w, len FROM t, LATERAL TABLE(words(s)) WHERE len > 1",
              "SELECT k, w, length(w) FROM t, unnest(string_split(s, ' ')) AS u(w) "
              "WHERE length(w) > 1"),
    "aggregate_above": (
        "SELECT n, count(*) AS c, sum(i) AS total FROM t, LATERAL TABLE(series(n)) "
        "GROUP BY n",
        "SELECT n, count(*), sum(i) FROM t, generate_series(1, n) AS g(i) GROUP BY n"),
    "alone": ("SELECT * FROM TABLE(series(4))",
              "SELECT i, 5 - i FROM generate_series(1, 4) AS g(i)"),
}


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("table_functions") / "t.parquet"
    pq.write_table(DATA, file, row_group_size=8)
    return file


def _session(path: Path, **settings: str) -> flowsql.Session:
    session = flowsql.connect(**{"execution.batch-size": "7", **settings})
    session.sql(f"CREATE TABLE t (k BIGINT, n BIGINT, s STRING) WITH ("
                f"'connector' = 'filesystem', 'path' = '{path}')")
    for fn in (tables.series, tables.words, tables.fails_on_three):
        session.register_function(fn)
    return session


@pytest.fixture(scope="module")
def sessions(path: Path) -> Iterator[dict[str, flowsql.Session]]:
    streaming = {"execution.runtime-mode": "streaming"}
    made = {"batch": _session(path), "parallel": _session(path, **{"parallelism.default": "2"}),
            "streaming": _session(path, **streaming),
            "streaming_parallel": _session(path, **streaming, **{"parallelism.default": "2"})}
    yield made
    for session in made.values():
        session.close()


def _duck(sql: str) -> pa.Table:
    con = duckdb.connect()
    con.register("t", DATA)
    return con.sql(sql).to_arrow_table()


@pytest.mark.parametrize("mode", ["batch", "parallel", "streaming", "streaming_parallel"])
@pytest.mark.parametrize("name", list(QUERIES))
def test_matches_duckdb(name: str, mode: str, sessions: dict[str, flowsql.Session]) -> None:
    query, oracle = QUERIES[name]
    result = sessions[mode].sql(query).to_arrow()
    assert_rows(result, _duck(oracle))


def test_left_form_keeps_every_input_row(sessions: dict[str, flowsql.Session]) -> None:
    result = sessions["batch"].sql(
        "SELECT k, a FROM t LEFT JOIN LATERAL TABLE(series(n)) AS T(a) ON TRUE "
        "WHERE a IS NULL").to_arrow()
    expected = [k for k, n in zip(DATA["k"].to_pylist(), DATA["n"].to_pylist())
                if n is None or n < 1]
    assert sorted(result["k"].to_pylist()) == expected


def test_over_a_changelog_input(sessions: dict[str, flowsql.Session]) -> None:
    """An updating input (a GROUP BY in streaming mode): row kinds follow each row to its
    function rows, and the materialized result is that of the final aggregate."""
    query = ("SELECT m, i FROM (SELECT n, max(k) AS m FROM t GROUP BY n) AS g, "
             "LATERAL TABLE(series(g.n)) AS T(i)")
    oracle = ("SELECT m, i FROM (SELECT n, max(k) AS m FROM t GROUP BY n) AS g, "
              "generate_series(1, g.n) AS s(i)")
    assert_rows(sessions["streaming"].sql(query).to_arrow(), _duck(oracle))


def test_non_deterministic_function_over_a_changelog_is_rejected(
        sessions: dict[str, flowsql.Session]) -> None:
    session = sessions["streaming"]
    session.register_function(tables.series, name="random_series", deterministic=False)
    with pytest.raises(PlanError, match="'random_series' is not deterministic"):
        session.sql("SELECT m, i FROM (SELECT n, max(k) AS m FROM t GROUP BY n) AS g, "
                    "LATERAL TABLE(random_series(g.n)) AS T(i)").to_arrow()


def test_failure_names_the_function_and_row(sessions: dict[str, flowsql.Session]) -> None:
    with pytest.raises(ExecutionError, match=r"function fails_on_three failed on the input row "
                       r"with k = 3"):
        sessions["batch"].sql("SELECT * FROM t, LATERAL TABLE(fails_on_three(k))").to_arrow()


def test_pushdown_and_explain(sessions: dict[str, flowsql.Session]) -> None:
    plan = "\n".join(sessions["batch"].sql(
        "EXPLAIN SELECT k, i FROM t, LATERAL TABLE(series(n)) AS T(i) "
        "WHERE k > 3 AND i > 1").to_arrow()["plan"].to_pylist())
    physical = plan[plan.index("== Physical Plan =="):]
    lines = [line.strip() for line in physical.splitlines()]
    function = next(i for i, line in enumerate(lines) if line.startswith("TableFunction"))
    assert "series(n) -> [i, down] hints: series(rows_per_call=3)" in lines[function]
    assert lines[function - 1].startswith("Filter (i > 1)")
    # the predicate over the input went below, into the scan
    assert "(k > 3)" in lines[function + 1]


@pytest.mark.parametrize(("sql", "message", "position"), [
    ("SELECT * FROM t, LATERAL TABLE(nope(k))", "table function 'nope' is not registered",
     (1, 37)),
    ("SELECT * FROM t LEFT JOIN LATERAL TABLE(series(n)) ON k > 1",
     r"LEFT JOIN LATERAL TABLE\(\.\.\.\) needs ON TRUE", (1, 55)),
    ("SELECT * FROM t, LATERAL TABLE(series(n)) AS T(a, b, c)",
     "returns 2 columns but 3 column aliases", (1, 46)),
    ("SELECT * FROM t, LATERAL TABLE(series(zz))", "column 'zz' not found", (1, 39)),
])
def test_binder_errors(sql: str, message: str, position: tuple[int, int],
                       sessions: dict[str, flowsql.Session]) -> None:
    with pytest.raises(BindError, match=message) as info:
        sessions["batch"].sql(sql)
    assert (info.value.line, info.value.col) == position
