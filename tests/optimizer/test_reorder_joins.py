"""Join order follows the join graph and the estimates; no needless cross products."""

from __future__ import annotations

from flowsql.optimizer import optimize
from flowsql.planner import types as T
from flowsql.planner.logical import Join, Scan, walk_plan

from .planbuilder import and_, col, cross, eq, filter_, lit, scan, table


def test_comma_list_in_bad_order_gets_no_cross_product():
    """FROM big, dim2, fact, dim1 WHERE big-fact, fact-dim1, dim1-dim2 equalities: the
    listed order would pair unrelated tables first."""
    big = scan(table("big", 100_000, bk=T.INT64, fk=T.INT64))
    dim2 = scan(table("dim2", 5, d2=T.INT64, label=T.STRING))
    fact = scan(table("fact", 10_000, fk=T.INT64, d1=T.INT64))
    dim1 = scan(table("dim1", 25, d1=T.INT64, d2=T.INT64))
    where = and_(eq(col(big, "fk"), col(fact, "fk")), eq(col(fact, "d1"), col(dim1, "d1")),
                 eq(col(dim1, "d2"), col(dim2, "d2")), eq(col(dim2, "label"), lit("x")))
    plan = filter_(cross(big, dim2, fact, dim1), where)
    result = optimize(plan).plan
    joins = [n for n in walk_plan(result) if isinstance(n, Join)]
    assert [j.kind for j in joins] == ["inner"] * 3
    # the filtered smallest tables meet first: the deepest join is dim1 with dim2
    deepest = joins[-1]
    names = {s.table.name for s in walk_plan(deepest) if isinstance(s, Scan)}
    assert names == {"dim1", "dim2"}
    assert [f.cid for f in result.schema] == [f.cid for f in plan.schema]


def test_disconnected_graph_still_joins_everything():
    a = scan(table("a", 10, x=T.INT64))
    b = scan(table("b", 10, y=T.INT64))
    c = scan(table("c", 10, z=T.INT64))
    plan = filter_(cross(a, b, c), eq(col(a, "x"), col(b, "y")))
    result = optimize(plan).plan
    kinds = sorted(n.kind for n in walk_plan(result) if isinstance(n, Join))
    assert kinds == ["cross", "inner"]
