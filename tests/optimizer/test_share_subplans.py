"""share_subplans: a CTE referenced several times is planned as one SharedSubplan and
ReuseSubplan leaves; non-deterministic or trivial subplans, and copies in different stages
of a parallel plan, are not shared."""

from __future__ import annotations

from pathlib import Path

import flowsql
from flowsql.optimizer import optimize, plan_physical
from flowsql.optimizer.share_subplans import share_subplans, subplan_shape
from flowsql.planner.physical import (
    HashAggregateExec,
    PhysicalPlan,
    ReuseSubplanExec,
    SharedSubplanExec,
)
from flowsql.session.execute.planning import bind_query
from flowsql.sql.statement_parser import QueryStatement, parse_one
from flowsql.tpch.queries import load_query
from tests.harness.tpch import TPCH_TABLES, create_table_sql

SHAPE = "EXPLAIN (COSTS OFF) "
#: a grouped CTE referenced three times, each reference reading all its columns (a
#: reference that reads fewer is pruned to fewer aggregates and is then another subplan)
THREE_TIMES = """
WITH per_region AS (
    SELECT n_regionkey AS region, count(*) AS nations, sum(n_nationkey) AS total
    FROM nation GROUP BY n_regionkey)
SELECT a.region, a.nations * a.total AS x, b.nations + b.total AS y, c.nations - c.total AS z
FROM per_region a JOIN per_region b ON a.region = b.region
     JOIN per_region c ON b.region = c.region
ORDER BY a.region"""


def _session(tpch_dir: Path, **settings: str) -> flowsql.Session:
    session = flowsql.connect(**settings)
    for name in TPCH_TABLES:
        session.sql(create_table_sql(name, tpch_dir))
    return session


def _physical(session: flowsql.Session, sql: str) -> str:
    text = session.sql(SHAPE + sql).plan_text
    assert text is not None
    return text.split("== Physical Plan ==")[1]


def _nodes(plan: PhysicalPlan) -> list[PhysicalPlan]:
    out = [plan]
    for child in plan.inputs:
        out += _nodes(child)
    return out


def test_q15_revenue_view_is_computed_once(tpch_session: flowsql.Session) -> None:
    physical = _physical(tpch_session, load_query(15))
    assert physical.count("SharedSubplan #1") == 1
    assert physical.count("ReuseSubplan #1") == 1
    # the shared copy holds the only scan of lineitem; the other reads the buffer
    assert physical.count("TableScan lineitem") == 1
    shared_at = physical.index("SharedSubplan #1")
    assert physical.index("HashAggregate groups=[l_suppkey]", shared_at) > shared_at


def test_cte_used_three_times_is_one_shared_and_two_reuses(
        tpch_session: flowsql.Session) -> None:
    physical = _physical(tpch_session, THREE_TIMES)
    assert physical.count("SharedSubplan #1") == 1
    assert physical.count("ReuseSubplan #1") == 2
    assert physical.count("TableScan nation") == 1


def test_non_deterministic_cte_is_not_shared(tpch_dir: Path) -> None:
    """``next_id`` declares itself non-deterministic, so each reference must call it; the
    same query over a deterministic expression is shared (the control)."""
    session = _session(tpch_dir)
    session.sql("CREATE TEMPORARY FUNCTION next_id AS 'tests.udfs.scalars.next_id' "
                "LANGUAGE PYTHON")
    template = """
        WITH t AS (SELECT n_regionkey AS r, sum({expr}) AS s FROM nation GROUP BY n_regionkey)
        SELECT a.r, a.s, b.s FROM t a JOIN t b ON a.r = b.r"""
    assert "SharedSubplan" not in _physical(session, template.format(expr="next_id(n_nationkey)"))
    assert "SharedSubplan #1" in _physical(session, template.format(expr="n_nationkey"))


def test_the_setting_switches_sharing_off(tpch_dir: Path) -> None:
    session = _session(tpch_dir, **{"optimizer.share-subplans": "false"})
    physical = _physical(session, load_query(15))
    assert "SharedSubplan" not in physical and "ReuseSubplan" not in physical
    assert physical.count("TableScan lineitem") == 2


def test_a_repeated_scan_alone_is_read_twice_not_buffered(
        tpch_session: flowsql.Session) -> None:
    physical = _physical(tpch_session, """
        WITH n AS (SELECT n_nationkey, n_name FROM nation WHERE n_regionkey = 1)
        SELECT a.n_name, b.n_name FROM n a JOIN n b ON a.n_nationkey = b.n_nationkey""")
    assert "SharedSubplan" not in physical
    assert physical.count("TableScan nation") == 2


def _planned(session: flowsql.Session, sql: str, share: bool = True) -> PhysicalPlan:
    statement = parse_one(sql)
    assert isinstance(statement, QueryStatement)
    settings = {**session.settings, "optimizer.share-subplans": str(share).lower()}
    optimized = optimize(bind_query(session, statement), settings)
    return plan_physical(optimized.plan, settings, optimized.context.estimator).physical


def test_shape_ignores_column_ids_but_not_constants(tpch_session: flowsql.Session) -> None:
    """The two bindings of Q15's view have different column ids and one shape; the same
    aggregate over another date range has another shape."""
    plan = _planned(tpch_session, load_query(15), share=False)
    aggregates = [n for n in _nodes(plan) if isinstance(n, HashAggregateExec) and n.group_exprs]
    assert len(aggregates) == 2
    first, second = aggregates
    assert {f.cid for f in first.schema}.isdisjoint({f.cid for f in second.schema})
    assert subplan_shape(first) == subplan_shape(second)
    other = _planned(tpch_session, load_query(15).replace("1996-01-01", "1995-01-01"),
                     share=False)
    changed = next(n for n in _nodes(other) if isinstance(n, HashAggregateExec)
                   and n.group_exprs)
    assert subplan_shape(changed) != subplan_shape(first)


def test_share_subplans_keeps_the_reuse_columns(tpch_session: flowsql.Session) -> None:
    """The reuse leaf takes the replaced copy's column ids (the nodes above refer to them)
    and the shared node's types; a second run of the pass changes nothing."""
    unshared = _planned(tpch_session, load_query(15), share=False)
    copies = [n for n in _nodes(unshared) if isinstance(n, HashAggregateExec) and n.group_exprs]
    plan = share_subplans(unshared)
    shared = [n for n in _nodes(plan) if isinstance(n, SharedSubplanExec)]
    reuses = [n for n in _nodes(plan) if isinstance(n, ReuseSubplanExec)]
    assert len(shared) == 1 and len(reuses) == 1
    assert shared[0].input is copies[0]
    assert reuses[0].schema == copies[1].schema
    assert [f.dtype for f in shared[0].schema] == [f.dtype for f in reuses[0].schema]
    assert share_subplans(plan) is plan


def test_copies_in_different_stages_are_not_shared(tpch_dir: Path) -> None:
    """At parallelism 2 each copy of Q15's view is cut by its own hash exchange into other
    stages; a stage's output cannot feed two consumers, so nothing is shared."""
    session = _session(tpch_dir, **{"parallelism.default": "2",
                                    "optimizer.small-query-on-one-subtask": "false"})
    physical = _physical(session, load_query(15))
    assert "Exchange[hash]" in physical
    assert "SharedSubplan" not in physical


def test_small_filtered_scan_of_a_large_table_is_read_once(tmp_path: Path) -> None:
    """Re-reading a table of 100,000 rows to keep 2,000 costs more than buffering them:
    the two equal filtered scans are one SharedSubplan, with the rows DuckDB computes. Over
    a table of 1,000 rows (the control) the scan is read twice."""
    import duckdb
    import pyarrow as pa
    import pyarrow.parquet as pq

    def write(name: str, rows: int) -> flowsql.Session:
        a = pa.array(range(rows), type=pa.int64())
        pq.write_table(pa.table({"a": a, "s": pa.array(
            ["x" if i % 50 == 0 else f"v{i % 7}" for i in range(rows)])}),
            tmp_path / f"{name}.parquet")
        session = flowsql.connect()
        session.sql(f"CREATE TABLE t WITH ('connector'='filesystem', "
                    f"'path'='{tmp_path / name}.parquet', 'format'='parquet')")
        return session

    sql = ("SELECT l.a, r.a AS b FROM t l JOIN t r ON l.a = r.a + 50 "
           "WHERE l.s = 'x' AND r.s = 'x' ORDER BY l.a")
    large = write("large", 100_000)
    physical = _physical(large, sql)
    assert physical.count("SharedSubplan #1") == 1 and physical.count("ReuseSubplan #1") == 1
    assert physical.count("TableScan t") == 1
    expected = duckdb.sql(sql.replace("FROM t l JOIN t r", f"FROM '{tmp_path}/large.parquet' l "
                                      f"JOIN '{tmp_path}/large.parquet' r")).fetchall()
    assert len(expected) == 1_999
    assert [tuple(r.values()) for r in large.sql(sql).to_arrow().to_pylist()] == expected
    assert _physical(write("small", 1_000), sql).count("TableScan t") == 2


#: two CTEs alike but for a constant (same operators over the same table) and the first
#: referenced twice: only the first's two copies are the same subplan
ALIKE_BUT_ONE_CONSTANT = """
WITH low AS (
    SELECT n_regionkey AS region, count(*) AS nations FROM nation
    WHERE n_nationkey > 3 GROUP BY n_regionkey),
high AS (
    SELECT n_regionkey AS region, count(*) AS nations FROM nation
    WHERE n_nationkey > 11 GROUP BY n_regionkey)
SELECT a.region, a.nations AS a_nations, b.nations AS b_nations, c.nations AS c_nations
FROM low a JOIN high b ON a.region = b.region JOIN low c ON b.region = c.region
ORDER BY a.region"""


def test_subplans_alike_in_outline_are_shared_only_when_equal(
        tpch_session: flowsql.Session, duckdb_tpch) -> None:  # type: ignore[no-untyped-def]
    """``high`` has the operators and table of ``low`` and another constant: it is computed
    on its own, while ``low``'s two references are one shared subplan; the rows are
    DuckDB's."""
    physical = _physical(tpch_session, ALIKE_BUT_ONE_CONSTANT)
    assert physical.count("SharedSubplan #1") == 1
    assert physical.count("ReuseSubplan #1") == 1
    assert "#2" not in physical
    assert physical.count("TableScan nation") == 2
    rows = tpch_session.sql(ALIKE_BUT_ONE_CONSTANT).to_arrow().to_pylist()
    expected = duckdb_tpch.sql(ALIKE_BUT_ONE_CONSTANT).to_arrow_table().to_pylist()
    assert rows == expected
    assert len(rows) == 5
