"""Shared subplans run once and every consumer reads the same rows: TPC-H Q15 and a CTE
used three times against DuckDB, the shared scan counted, a non-deterministic CTE run per
reference, the buffer spilled under a tiny budget, and sharing inside a parallel stage."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import flowsql
from flowsql.planner.physical import (
    PhysicalPlan,
    ReuseSubplanExec,
    SharedSubplanExec,
    TableScanExec,
    ValuesExec,
)
from flowsql.planner.schema import Field
from flowsql.runtime import registry
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.operators.shared_subplan import SharedSubplanOperator, SharedSubplans
from flowsql.runtime.spill import SpillSpace
from flowsql.tpch.queries import load_query
from flowsql.tpch.verify import compare_tables
from tests.harness.tpch import TPCH_TABLES, create_table_sql
from tests.optimizer.test_share_subplans import THREE_TIMES

#: a CTE over VALUES joined with itself, next to a scan at parallelism 2: the two copies
#: run in the root stage, behind the gather of the scan
IN_ONE_STAGE = """
WITH t AS (SELECT r, count(*) AS c, sum(v) AS s
           FROM (VALUES (1, 10), (2, 20), (1, 30), (3, 5)) AS x(r, v) GROUP BY r)
SELECT n.n_name, a.c, a.s, b.c AS c2, b.s AS s2
FROM t a JOIN t b ON a.r = b.r JOIN nation n ON n.n_regionkey = a.r
ORDER BY n.n_name"""
#: a CTE computed by operators that hold nothing (a UNION ALL of two scans) and read twice
#: by another UNION ALL: at a 1 MiB budget only the shared buffer (a few MB) must spill
LARGE_OUTPUT = """
WITH twice AS (
    SELECT l_orderkey, l_linenumber, l_comment FROM lineitem
    UNION ALL
    SELECT o_orderkey, 0, o_comment FROM orders)
SELECT * FROM twice UNION ALL SELECT * FROM twice"""


def _session(tpch_dir: Path, **settings: str) -> flowsql.Session:
    session = flowsql.connect(**settings)
    for name in TPCH_TABLES:
        session.sql(create_table_sql(name, tpch_dir))
    return session


def _matches_duckdb(session: flowsql.Session, duck: duckdb.DuckDBPyConnection,
                    sql: str, ordered: bool = True) -> None:
    expected = duck.sql(sql).to_arrow_table()
    actual = session.sql(sql).to_arrow()
    assert compare_tables(actual, expected, ordered=ordered) == []


@pytest.fixture()
def scans(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The tables of the scan operators created, in order."""
    created: list[str] = []
    factory = registry.OPERATORS[TableScanExec]

    def counting(node: PhysicalPlan):  # type: ignore[no-untyped-def]
        assert isinstance(node, TableScanExec)
        created.append(node.table.name)
        return factory(node)

    monkeypatch.setitem(registry.OPERATORS, TableScanExec, counting)
    yield created


def test_q15_shares_the_revenue_view_and_matches_duckdb(
        tpch_dir: Path, duckdb_tpch: duckdb.DuckDBPyConnection, scans: list[str]) -> None:
    session = _session(tpch_dir)
    assert "ReuseSubplan #1" in (session.sql("EXPLAIN " + load_query(15)).plan_text or "")
    _matches_duckdb(session, duckdb_tpch, load_query(15))
    assert scans.count("lineitem") == 1


def test_without_sharing_q15_scans_lineitem_twice(
        tpch_dir: Path, duckdb_tpch: duckdb.DuckDBPyConnection, scans: list[str]) -> None:
    """The control of the test above: the counter does see both copies when they run."""
    session = _session(tpch_dir, **{"optimizer.share-subplans": "false"})
    _matches_duckdb(session, duckdb_tpch, load_query(15))
    assert scans.count("lineitem") == 2


def test_explain_analyze_shows_the_shared_scan_once(tpch_dir: Path) -> None:
    text = _session(tpch_dir).sql("EXPLAIN ANALYZE " + load_query(15)).plan_text or ""
    scan_lines = [line for line in text.splitlines() if "TableScan lineitem" in line]
    assert len(scan_lines) == 1 and " actual=" in scan_lines[0]
    reuse = next(line for line in text.splitlines() if "ReuseSubplan #1" in line)
    shared = next(line for line in text.splitlines() if "SharedSubplan #1" in line)
    # both read every row of the view (one per supplier with revenue in the quarter)
    assert reuse.split(" actual=")[1].split()[0] == shared.split(" actual=")[1].split()[0]


def test_cte_used_three_times_matches_duckdb(
        tpch_dir: Path, duckdb_tpch: duckdb.DuckDBPyConnection, scans: list[str]) -> None:
    session = _session(tpch_dir)
    _matches_duckdb(session, duckdb_tpch, THREE_TIMES)
    assert scans.count("nation") == 1


def test_non_deterministic_cte_runs_for_each_reference(tpch_dir: Path) -> None:
    """``next_id`` counts up on every call, so two runs of the CTE never agree: each row
    of the self-join sees two different sums."""
    session = _session(tpch_dir)
    session.sql("CREATE TEMPORARY FUNCTION next_id AS 'tests.udfs.scalars.next_id' "
                "LANGUAGE PYTHON")
    rows = session.sql("""
        WITH t AS (SELECT n_regionkey AS r, sum(next_id(n_nationkey)) AS s
                   FROM nation GROUP BY n_regionkey)
        SELECT a.r, a.s AS first, b.s AS second FROM t a JOIN t b ON a.r = b.r""").to_arrow()
    assert rows.num_rows == 5
    assert all(row["first"] != row["second"] for row in rows.to_pylist())


def test_spilled_buffer_gives_the_same_rows(tpch_dir: Path, duckdb_tpch: duckdb.DuckDBPyConnection,
                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """The shared output goes to one spill run, is read back by both consumers, and is
    removed."""
    from flowsql.runtime.operators import shared_subplan

    writers: list[object] = []

    class CountingWriter(shared_subplan.SpillWriter):  # type: ignore[misc, name-defined]
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, **kwargs)
            writers.append(self)

    monkeypatch.setattr(shared_subplan, "SpillWriter", CountingWriter)
    session = _session(tpch_dir, **{"execution.memory-budget": "1mb",
                                    "io.tmp.dirs": str(tmp_path)})
    assert "ReuseSubplan #1" in (session.sql("EXPLAIN " + LARGE_OUTPUT).plan_text or "")
    _matches_duckdb(session, duckdb_tpch, LARGE_OUTPUT, ordered=False)
    assert len(writers) == 1
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_sharing_inside_a_parallel_stage(tpch_dir: Path,
                                         duckdb_tpch: duckdb.DuckDBPyConnection) -> None:
    session = _session(tpch_dir, **{"parallelism.default": "2",
                                    "optimizer.small-query-on-one-subtask": "false"})
    try:
        text = session.sql("EXPLAIN ANALYZE " + IN_ONE_STAGE).plan_text or ""
        assert "Exchange[gather]" in text and "ReuseSubplan #1" in text
        assert "at parallelism 2" in text
        _matches_duckdb(session, duckdb_tpch, IN_ONE_STAGE)
        _matches_duckdb(session, duckdb_tpch, load_query(15))
    finally:
        session.close()


# -- the buffer on its own -------------------------------------------------------------------

def _plan(share_id: int, rows: int) -> tuple[SharedSubplanExec, ReuseSubplanExec]:
    field = Field.fresh("x", pa.int64())
    source = ValuesExec((field,), (), float(rows))
    return (SharedSubplanExec(source, share_id, float(rows)),
            ReuseSubplanExec(share_id, (Field.fresh("x", pa.int64()),), float(rows)))


def _batches(rows: int) -> list[pa.RecordBatch]:
    return [pa.record_batch([pa.array(range(start, min(start + 1000, rows)), pa.int64())],
                            names=["x"]) for start in range(0, rows, 1000)]


def _read(node: SharedSubplanExec | ReuseSubplanExec, context: OperatorContext) -> list[int]:
    operator = SharedSubplanOperator(node)
    operator.open(context)
    try:
        return [v for b in operator.produce() for v in b.column(0).to_pylist()]
    finally:
        operator.close()


@pytest.mark.parametrize("budget", [None, 64 * 1024])
def test_buffer_runs_once_and_serves_consumers_in_any_order(budget: int | None,
                                                           tmp_path: Path) -> None:
    shared, reuse = _plan(7, 50_000)
    runs: list[PhysicalPlan] = []

    def run(node: PhysicalPlan) -> Iterator[pa.RecordBatch]:
        runs.append(node)
        yield from _batches(50_000)

    from flowsql.planner.physical import HashJoinExec

    root = HashJoinExec(shared, reuse, "inner", (), (), None, "right", 1.0)
    store = SharedSubplans(root, run)
    memory = MemoryBudget(budget)
    space = SpillSpace([str(tmp_path)])
    context = OperatorContext(name="test", memory=memory, spill=space, shared_subplans=store)
    # the reuse is read first: it runs the subplan; the shared node then reads the buffer
    assert _read(reuse, context) == list(range(50_000))
    assert memory.used > 0 if budget is None else context.metrics.get("spilled_runs") == 1
    assert _read(shared, context) == list(range(50_000))
    assert runs == [shared.input] and store.runs[7] == 1
    # after the last consumer, the memory is back and the spill run deleted
    assert memory.used == 0
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    space.cleanup()
