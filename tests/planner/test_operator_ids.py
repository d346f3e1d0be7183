"""Stable operator ids: the same meaning gives the same id, whatever the parallelism, the
cut into stages, or a change of the stateless operators around the state."""

from __future__ import annotations

from pathlib import Path

import pytest

import flowsql
from flowsql.planner.operator_ids import keeps_state, node_operator_ids, operator_ids
from flowsql.planner.physical import PhysicalPlan
from flowsql.runtime.jobgraph import build_job_graph
from flowsql.session.execute.planning import plan_statement
from flowsql.sql.statement_parser import parse_one


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    (tmp_path / "a.csv").write_text("k,v,s,ts\n1,2,x,2024-01-01 00:00:00\n")
    return tmp_path


def physical(data_dir: Path, sql: str, parallelism: int = 1) -> PhysicalPlan:
    session = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                 "parallelism.default": str(parallelism)})
    session.sql(f"""CREATE TABLE t (k INT, v INT, s STRING, ts TIMESTAMP(3),
                    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
                    WITH ('connector' = 'filesystem', 'path' = '{data_dir}', 'format' = 'csv')""")
    session.sql(f"""CREATE TABLE u (k INT, w INT, ts TIMESTAMP(3),
                    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
                    WITH ('connector' = 'filesystem', 'path' = '{data_dir}', 'format' = 'csv')""")
    statement = parse_one(sql)
    return plan_statement(session, statement)[2]  # type: ignore[arg-type]


def stateful_ids(plan: PhysicalPlan) -> list[str]:
    ids = node_operator_ids(plan)
    found: list[str] = []

    def visit(node: PhysicalPlan) -> None:
        if keeps_state(node):
            found.append(ids[id(node)])
        for child in node.inputs:
            visit(child)

    visit(plan)
    return found


GROUP_BY = "SELECT k, COUNT(*) AS c FROM t GROUP BY k"


def test_ids_are_the_same_on_every_planning(data_dir: Path) -> None:
    first = operator_ids(physical(data_dir, GROUP_BY))
    assert first == operator_ids(physical(data_dir, GROUP_BY))
    assert [i.rsplit("-", 1)[0] for i in first] == ["project", "group-aggregate", "source"]


def test_stages_at_parallelism_2_carry_the_ids_of_parallelism_1(data_dir: Path) -> None:
    sql = ("SELECT a.k, COUNT(*) FROM t a JOIN u b ON a.k = b.k "
           "WHERE a.v > 1 GROUP BY a.k")
    single = stateful_ids(physical(data_dir, sql))
    plan = physical(data_dir, sql, parallelism=2)
    graph = build_job_graph(plan, 2)
    staged = [i for stage in graph.stages for i in stage.operator_ids
              if not i.startswith(("exchange-", "project-", "filter-"))]
    assert sorted(staged) == sorted(single)
    assert stateful_ids(plan) == single
    for stage in graph.stages:  # one id per node of the stage plan, in pre-order
        assert len(stage.operator_ids) == _count(stage.plan)


def _count(plan: PhysicalPlan) -> int:
    return 1 + sum(_count(child) for child in plan.inputs)


@pytest.mark.parametrize(("changed", "keeps"), [
    ("SELECT k, COUNT(*) AS c, k + 1 AS k1 FROM t GROUP BY k", True),   # projection above
    ("SELECT k, c FROM (SELECT k, COUNT(*) AS c FROM t GROUP BY k) WHERE c > 2", True),
    ("SELECT k, COUNT(*) AS c FROM t WHERE v > 0 GROUP BY k", True),    # filter below
    ("SELECT k, COUNT(*) AS c, SUM(v) AS total FROM t GROUP BY k", True),  # added function
    ("SELECT s, COUNT(*) AS c FROM t GROUP BY s", False),               # other keys
    ("SELECT k, s, COUNT(*) AS c FROM t GROUP BY k, s", False),
])
def test_which_query_changes_keep_the_aggregate_id(data_dir: Path, changed: str,
                                                   keeps: bool) -> None:
    before = stateful_ids(physical(data_dir, GROUP_BY))
    after = stateful_ids(physical(data_dir, changed))
    aggregate = [i for i in before if i.startswith("group-aggregate-")]
    assert (aggregate[0] in after) is keeps
    assert before[-1] == after[-1]  # the source's id never depends on the query


def test_window_shape_is_part_of_the_id(data_dir: Path) -> None:
    def window(size: int) -> list[str]:
        return stateful_ids(physical(data_dir, (
            f"SELECT k, window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
            f"INTERVAL '{size}' SECOND)) GROUP BY k, window_start, window_end")))

    assert window(5) == window(5)
    assert window(5)[0] != window(10)[0]


def test_the_same_table_read_twice_gets_two_ids(data_dir: Path) -> None:
    ids = stateful_ids(physical(data_dir, "SELECT a.k FROM t a JOIN t b ON a.k = b.k"))
    sources = [i for i in ids if i.startswith("source-")]
    assert len(sources) == 2 and sources[1] == f"{sources[0]}-2"


def test_join_order_is_part_of_the_id(data_dir: Path) -> None:
    one = stateful_ids(physical(data_dir, "SELECT t.k FROM t JOIN u ON t.k = u.k"))
    other = stateful_ids(physical(data_dir, "SELECT t.k FROM u JOIN t ON t.k = u.k"))
    joins = [i for i in one + other if i.startswith("join-")]
    assert len(joins) == 2 and joins[0] != joins[1]
