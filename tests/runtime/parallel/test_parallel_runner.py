"""The parallel runner: failures, worker life cycle, scan splitting, plans as JSON."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import ExecutionError
from flowsql.planner.physical import ExchangeExec
from flowsql.runtime.jobgraph import build_job_graph
from flowsql.runtime.parallel.plan_codec import dumps, loads
from flowsql.session import Session
from flowsql.session.execute.planning import plan_query
from flowsql.sql.statement_parser import parse_one
from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from tests.harness.tpch import TPCH_TABLES


@pytest.fixture(scope="module")
def session(tpch_dir: Path) -> Iterator[Session]:
    s = flowsql.connect(parallelism=2)
    # these tests are about the workers: plan for them however small the query
    s.set("optimizer.small-query-on-one-subtask", "false")
    for name in ("orders", "lineitem", "customer", "nation"):
        s.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
    yield s
    s.close()


def test_failing_operator_fails_the_query_naming_operator_and_subtask(
        session: Session) -> None:
    started = time.monotonic()
    with pytest.raises(ExecutionError) as failure:
        session.sql("SELECT o_orderkey, CAST(o_comment AS INTEGER) FROM orders")
    # generous: the point is that a failing subtask ends the job instead of leaving it
    # hanging, not how fast a loaded machine reports it
    assert time.monotonic() - started < 60
    message = str(failure.value)
    assert "ProjectExec" in message and "subtask" in message
    assert "o_comment" in message or "INTEGER" in message or "int" in message
    # the cluster survives a failed query
    assert session.sql("SELECT count(*) FROM orders").table.column(0).to_pylist() == [15000]


def test_closing_the_session_leaves_no_worker_process(tpch_dir: Path) -> None:
    s = flowsql.connect(parallelism=2)
    s.set("optimizer.small-query-on-one-subtask", "false")
    s.sql(f"CREATE TABLE nation WITH ('path'='{tpch_dir / 'nation.parquet'}')")
    with pytest.raises(ExecutionError):
        s.sql("SELECT CAST(n_name AS INTEGER) FROM nation")
    pids = s.parallel_runner.worker_pids
    assert len(pids) == 2 and all(psutil.pid_exists(p) for p in pids)
    s.close()
    children = {c.pid for c in psutil.Process().children(recursive=True)}
    assert not children & set(pids)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in pids)


def test_scan_is_split_by_row_groups(tmp_path: Path, session: Session) -> None:
    values = pa.table({"k": pa.array(range(10_000), pa.int64()),
                       "v": pa.array([i % 7 for i in range(10_000)], pa.int64())})
    pq.write_table(values, tmp_path / "t.parquet", row_group_size=1000)
    session.sql(f"CREATE OR REPLACE TABLE split_t WITH ('path'='{tmp_path / 't.parquet'}')")
    result = session.sql("SELECT v, count(*), sum(k) FROM split_t GROUP BY v ORDER BY v")
    expected = values.group_by("v").aggregate([("k", "count"), ("k", "sum")]).sort_by("v")
    assert result.table.column(1).to_pylist() == expected.column("k_count").to_pylist()
    assert result.table.column(2).to_pylist() == expected.column("k_sum").to_pylist()
    limited = session.sql("SELECT k FROM split_t LIMIT 5").table
    assert limited.num_rows == 5


def test_parallelism_one_runs_in_process(tpch_dir: Path) -> None:
    with flowsql.connect() as s:
        s.sql(f"CREATE TABLE nation WITH ('path'='{tpch_dir / 'nation.parquet'}')")
        assert s.sql("SELECT count(*) FROM nation").table.column(0).to_pylist() == [25]
        assert s.parallel_runner is None


@pytest.mark.parametrize("number", QUERY_NUMBERS)
def test_tpch_stage_plans_round_trip_through_json(tpch_dir: Path, number: int) -> None:
    s = flowsql.connect(parallelism=3)
    s.set("optimizer.small-query-on-one-subtask", "false")
    for name in TPCH_TABLES:
        s.sql(f"CREATE TABLE {name} WITH ('path'='{tpch_dir / (name + '.parquet')}')")
    _, _, physical = plan_query(s, parse_one(load_query(number)))
    graph = build_job_graph(physical, 3)
    assert graph.root.parallelism == 1 and graph.root.output is None
    assert len(graph.edges) == len(graph.stages) - 1
    for stage in graph.stages:
        text = dumps(stage.plan)
        assert dumps(loads(text)) == text
        assert "Exchange" not in text  # exchanges became edges
    assert all(not isinstance(n, ExchangeExec) for n in (s.plan for s in graph.stages))
