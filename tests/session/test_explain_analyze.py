"""EXPLAIN ANALYZE: actual rows per operator (hand-checked) at parallelism 1 and 2, the
figures table on the Result, q-error, own time, and the clear error for a streaming query.

The data: ``a`` has ids 1..6 in groups [1, 1, 2, 2, 2, 3]; ``b`` names groups 1, 2 and 4.
``WHERE a.id > 1`` keeps 5 rows of ``a`` (groups 1, 2, 2, 2, 3); joined with ``b`` they give
4 rows (group 3 has no name); grouped by name, 2 rows (x: 1, y: 3).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import PlanError, SqlSyntaxError
from flowsql.planner.explain_analyze import ANALYSIS_SCHEMA, q_error
from flowsql.sql.statement_parser import ExplainStatement, parse_one

QUERY = ("SELECT name, COUNT(*) AS c FROM a JOIN b ON a.grp = b.grp WHERE a.id > 1 "
         "GROUP BY name")

#: (node, actual rows) in pre-order, for the plans each parallelism gets
EXPECTED_ACTUALS = {
    1: [("ProjectExec", 2), ("HashAggregateExec", 2), ("HashJoinExec", 4),
        ("TableScanExec", 5), ("TableScanExec", 3)],
    # gather; final aggregate; hash exchange of the partial aggregate (all of b, hence
    # every join row, is read by one subtask: 2 partial groups); the broadcast of a's 5
    # filtered rows counts them once, not once per receiving subtask
    2: [("ExchangeExec", 2), ("ProjectExec", 2), ("HashAggregateExec", 2),
        ("ExchangeExec", 2), ("HashAggregateExec", 2), ("HashJoinExec", 4),
        ("ExchangeExec", 5), ("TableScanExec", 5), ("TableScanExec", 3)],
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("explain_analyze")
    pq.write_table(pa.table({"id": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
                             "grp": pa.array([1, 1, 2, 2, 2, 3], pa.int64())}),
                   path / "a.parquet")
    pq.write_table(pa.table({"grp": pa.array([1, 2, 4], pa.int64()),
                             "name": ["x", "y", "z"]}), path / "b.parquet")
    return path


def _session(data_dir: Path, **settings: str) -> flowsql.Session:
    session = flowsql.connect(**settings)
    for name in ("a", "b"):
        session.sql(f"CREATE TABLE {name} WITH ('connector'='filesystem', "
                    f"'path'='{data_dir / (name + '.parquet')}', 'format'='parquet')")
    return session


@pytest.fixture(params=[1, 2], ids=["parallelism1", "parallelism2"])
def session(request: pytest.FixtureRequest, data_dir: Path) -> Iterator[flowsql.Session]:
    # the tiny query would otherwise be costed onto one subtask: measure the parallel path
    session = _session(data_dir, **{"parallelism.default": str(request.param),
                                    "optimizer.small-query-on-one-subtask": "false"})
    try:
        yield session
    finally:
        session.close()


def test_actual_rows_per_operator(session: flowsql.Session) -> None:
    parallelism = int(session.settings["parallelism.default"])
    result = session.sql("EXPLAIN ANALYZE " + QUERY)
    analysis = result.analysis
    assert analysis is not None
    assert [(r["node"], r["actual_rows"]) for r in analysis.to_pylist()] == \
        EXPECTED_ACTUALS[parallelism]
    assert result.metrics["rows"] == 2
    text = result.plan_text
    assert text is not None
    assert f"at parallelism {parallelism}" in text
    assert "HashJoin[inner" in text and "actual=4 " in text


def test_figures_table(session: flowsql.Session) -> None:
    result = session.sql("EXPLAIN ANALYZE " + QUERY)
    analysis = result.analysis
    assert analysis is not None and analysis.schema == ANALYSIS_SCHEMA
    rows = analysis.to_pylist()
    assert [r["operator"] for r in rows] == list(range(len(rows)))
    # one row per line of the plan, in the same order, with the same depth
    lines = result.to_arrow().column("plan").to_pylist()[1:1 + len(rows)]
    for row, line in zip(rows, lines):
        assert line == "  " * row["depth"] + line.lstrip()
        assert line.lstrip().startswith(row["description"] + f" rows=~{round(row['estimated_rows'])}")
        assert f" actual={row['actual_rows']} " in line
        assert row["q_error"] == q_error(row["estimated_rows"], row["actual_rows"])
        assert row["seconds"] >= 0
    assert len({r["operator_id"] for r in rows}) == len(rows)
    # the query's own rows are not the statement's result: EXPLAIN returns plan lines
    assert result.kind == "explain" and result.to_arrow().column_names == ["plan"]


def test_own_time_excludes_the_inputs(data_dir: Path) -> None:
    """In one process the operators run one at a time, so their own times cannot add up
    to more than the whole run."""
    session = _session(data_dir)
    result = session.sql("EXPLAIN ANALYZE " + QUERY)
    assert result.analysis is not None
    own = sum(result.analysis.column("seconds").to_pylist())
    assert 0 < own <= result.metrics["seconds"]


def test_result_equals_a_plain_run(data_dir: Path) -> None:
    session = _session(data_dir)
    plain = session.sql(QUERY).to_arrow()
    assert sorted(plain.to_pylist(), key=lambda r: r["name"]) == [
        {"name": "x", "c": 1}, {"name": "y", "c": 3}]
    result = session.sql("EXPLAIN ANALYZE " + QUERY)
    assert result.analysis is not None
    assert result.analysis.column("actual_rows")[0].as_py() == plain.num_rows


def test_streaming_query_is_a_clear_error() -> None:
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    session.sql("CREATE TABLE endless (id BIGINT, k INT) WITH ('connector' = 'datagen', "
                "'rows-per-second' = '100')")
    with pytest.raises(PlanError, match="EXPLAIN ANALYZE .* needs batch mode"):
        session.sql("EXPLAIN ANALYZE SELECT k, COUNT(*) AS c FROM endless GROUP BY k")


def test_spark_engine_is_a_clear_error(data_dir: Path) -> None:
    session = _session(data_dir, engine="spark")
    with pytest.raises(PlanError, match="EXPLAIN ANALYZE measures the local engine"):
        session.sql("EXPLAIN ANALYZE " + QUERY)


def test_costs_off_leaves_estimates_out(data_dir: Path) -> None:
    session = _session(data_dir)
    with_costs = session.sql("EXPLAIN " + QUERY).plan_text
    without = session.sql("EXPLAIN (COSTS OFF) " + QUERY).plan_text
    assert with_costs is not None and without is not None
    assert "rows=~" in with_costs and "rows=~" not in without
    assert without == "\n".join(line.split(" rows=~")[0] for line in with_costs.split("\n"))


@pytest.mark.parametrize("text, mode, estimates", [
    ("EXPLAIN ANALYZE SELECT 1", "analyze", True),
    ("EXPLAIN (COSTS OFF) SELECT 1", "plan", False),
    ("EXPLAIN (costs on) SELECT 1", "plan", True),
    ("EXPLAIN (COSTS OFF) VERBOSE SELECT 1", "verbose", False),
    ("EXPLAIN (SELECT 1)", "plan", True),
])
def test_parse(text: str, mode: str, estimates: bool) -> None:
    statement = parse_one(text)
    assert isinstance(statement, ExplainStatement)
    assert (statement.mode, statement.estimates) == (mode, estimates)


@pytest.mark.parametrize("text", ["EXPLAIN (COSTS OFF) ANALYZE SELECT 1",
                                  "EXPLAIN (COSTS OFF) PYSPARK SELECT 1",
                                  "EXPLAIN (COSTS MAYBE) SELECT 1"])
def test_parse_rejects(text: str) -> None:
    with pytest.raises(SqlSyntaxError):
        parse_one(text)


@pytest.mark.parametrize("estimated, actual, expected", [
    (10, 100, 10.0), (100, 10, 10.0), (0.3, 0, 1.0), (0, 5, 5.0), (7, 7, 1.0)])
def test_q_error(estimated: float, actual: float, expected: float) -> None:
    assert q_error(estimated, actual) == expected
