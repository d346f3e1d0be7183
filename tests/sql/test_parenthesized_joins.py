"""Parenthesized joins in FROM: ``a JOIN (b JOIN c ON ...) ON ...`` binds the inner join first,
so a query can state a right-deep or bushy join tree (with ``optimizer.disable-rules`` =
``reorder_joins`` the tree is kept as written). Rows are hand-checked."""

from __future__ import annotations

from pathlib import Path

import pytest

import flowsql
from flowsql.errors import FlowSQLError
from flowsql.session import Session


def _session(tmp_path: Path) -> Session:
    tables = {"a": "1,x\n2,y\n3,z\n", "b": "1,10\n2,20\n", "c": "10,p\n20,q\n30,r\n",
              "d": "p,100\nq,200\n"}
    session = flowsql.connect(parallelism=1)
    columns = {"a": "(ak INT, av STRING)", "b": "(bk INT, bc INT)", "c": "(ck INT, cv STRING)",
               "d": "(dv STRING, dn INT)"}
    for name, text in tables.items():
        path = tmp_path / f"{name}.csv"
        path.write_text(text)
        session.sql(f"CREATE TABLE {name} {columns[name]} WITH ('connector' = 'filesystem', "
                    f"'path' = '{path}', 'format' = 'csv')")
    return session


EXPECTED = [(1, "x", 10, "p", 100), (2, "y", 20, "q", 200)]
BUSHY = ("SELECT ak, av, bc, cv, dn FROM ((a JOIN b ON ak = bk) "
         "JOIN (c JOIN d ON cv = dv) ON bc = ck)")
RIGHT_DEEP = ("SELECT ak, av, bc, cv, dn FROM a JOIN (b JOIN (c JOIN d ON cv = dv) ON bc = ck) "
              "ON ak = bk")


@pytest.mark.parametrize("sql", [BUSHY, RIGHT_DEEP])
@pytest.mark.parametrize("reorder", [True, False])
def test_parenthesized_join_trees_give_the_join_rows(tmp_path: Path, sql: str,
                                                     reorder: bool) -> None:
    session = _session(tmp_path)
    if not reorder:
        session.sql("SET 'optimizer.disable-rules' = 'reorder_joins'")
    rows = session.sql(sql).to_arrow().to_pylist()
    assert sorted(tuple(r.values()) for r in rows) == EXPECTED


def test_the_written_tree_is_kept_without_join_reordering(tmp_path: Path) -> None:
    session = _session(tmp_path)
    session.sql("SET 'optimizer.disable-rules' = 'reorder_joins'")
    plan = "\n".join(r["plan"] for r in session.sql("EXPLAIN " + BUSHY).to_arrow().to_pylist())
    optimized = plan.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]
    joins = [line for line in optimized.splitlines() if "Join[" in line]
    # the top join has two joins below it, one on each side (a bushy tree)
    assert len(joins) == 3
    top = joins[0].index("Join[")
    assert [j.index("Join[") for j in joins[1:]] == [top + 2, top + 2]


def test_an_on_inside_parentheses_sees_only_the_relations_there(tmp_path: Path) -> None:
    session = _session(tmp_path)
    with pytest.raises(FlowSQLError, match="ak"):
        session.sql("SELECT * FROM a JOIN (b JOIN c ON ak = ck) ON ak = bk").to_arrow()


def test_a_parenthesized_query_is_still_a_subquery(tmp_path: Path) -> None:
    session = _session(tmp_path)
    rows = session.sql("SELECT ak, bc FROM ((SELECT * FROM a) s JOIN b ON s.ak = bk)"
                       ).to_arrow().to_pylist()
    assert sorted(tuple(r.values()) for r in rows) == [(1, 10), (2, 20)]
