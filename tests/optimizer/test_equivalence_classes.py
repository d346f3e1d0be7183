"""Equivalence classes of columns and the predicates infer_equivalences derives from them."""

from __future__ import annotations

from flowsql.optimizer import optimize
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.equivalence import EquivalenceClasses, is_deterministic
from flowsql.optimizer.rules.infer_equivalences import infer_equivalences
from flowsql.optimizer.rules.push_down_filter import push_down_filter
from flowsql.planner import types as T
from flowsql.planner.expressions import Call, ColumnRef, Expr, UdfCall, column_ids, conjuncts
from flowsql.planner.logical import Filter, Join, LogicalPlan, Scan, walk_plan
from flowsql.planner.udf import FunctionHints, UserFunction

from .oracle import assert_optimized_same
from .planbuilder import and_, col, cross, eq, filter_, join, lit, scan, table


def _pushed(plan: LogicalPlan, settings: dict[str, str] | None = None) -> LogicalPlan:
    context = OptimizerContext(settings or {})
    return infer_equivalences(push_down_filter(plan, context), context)


def _equalities(plan: LogicalPlan) -> set[frozenset[int]]:
    """Every column-column equality anywhere in the plan, as a set of two column ids."""
    out: set[frozenset[int]] = set()
    for node in walk_plan(plan):
        exprs: list[Expr] = []
        if isinstance(node, Join):
            exprs = conjuncts(node.condition)
        elif isinstance(node, Filter):
            exprs = conjuncts(node.predicate)
        elif isinstance(node, Scan):
            exprs = list(node.filters)
        for e in exprs:
            if (isinstance(e, Call) and e.name == "eq"
                    and all(isinstance(a, ColumnRef) for a in e.args)):
                out.add(frozenset(column_ids(e)))
    return out


def _scan_filters(plan: LogicalPlan, name: str) -> list[str]:
    return [str(f) for s in walk_plan(plan) if isinstance(s, Scan) and s.table.name == name
            for f in s.filters]


def test_classes_are_transitive_and_carry_constants():
    a = scan(table("a", 10, x=T.INT64, y=T.INT64))
    b = scan(table("b", 10, x=T.INT64))
    c = scan(table("c", 10, x=T.INT64, s=T.STRING))
    ax, ay, bx, cx = col(a, "x"), col(a, "y"), col(b, "x"), col(c, "x")
    classes = EquivalenceClasses.from_conjuncts(
        [eq(ax, bx), eq(bx, cx), eq(cx, lit(7)), eq(ay, lit(1))])
    assert classes.find(ax.cid) == classes.find(cx.cid) != classes.find(ay.cid)
    assert classes.constant(ax.cid) == lit(7)
    assert classes.constant(ay.cid) == lit(1)
    assert sorted(len(m) for m in classes.classes()) == [1, 3]


def test_casts_nulls_and_non_deterministic_constants_are_not_equalities():
    a = scan(table("a", 10, x=T.INT64, s=T.STRING))
    b = scan(table("b", 10, x=T.INT32))
    random = UserFunction("rnd", "m.rnd", result_type=T.INT64,
                          hints=FunctionHints(deterministic=False))
    fixed = UserFunction("one", "m.one", result_type=T.INT64)
    rnd_call = UdfCall(random, (), T.INT64)
    assert not is_deterministic(rnd_call)
    assert is_deterministic(UdfCall(fixed, (), T.INT64))
    classes = EquivalenceClasses()
    assert not classes.add(eq(col(a, "x"), col(b, "x")))  # INT64 = INT32: a cast is needed
    assert not classes.add(eq(col(a, "x"), lit(None, T.INT64)))
    assert not classes.add(eq(col(a, "x"), rnd_call))
    assert not classes.add(eq(col(a, "s"), col(a, "s")))
    assert classes.add(eq(col(a, "x"), UdfCall(fixed, (), T.INT64)))


def test_transitive_edge_is_added_between_unjoined_relations():
    a = scan(table("a", 100, k=T.INT64))
    b = scan(table("b", 100, k=T.INT64))
    c = scan(table("c", 100, k=T.INT64))
    plan = filter_(cross(a, b, c), and_(eq(col(a, "k"), col(b, "k")),
                                        eq(col(b, "k"), col(c, "k"))))
    result = _pushed(plan)
    assert frozenset({col(a, "k").cid, col(c, "k").cid}) in _equalities(result)


def test_constant_reaches_every_scan_of_the_class(oracle, t, u, v):
    a, b, c = scan(t), scan(u), scan(v)
    plan = filter_(cross(a, b, c), and_(eq(col(a, "a"), col(b, "x")),
                                        eq(col(b, "x"), col(c, "k")),
                                        eq(col(c, "k"), lit(1))))
    result = _pushed(plan)
    assert _scan_filters(result, "t") == ["(a = 1)"]
    assert _scan_filters(result, "u") == ["(x = 1)"]
    assert _scan_filters(result, "v") == ["(k = 1)"]
    assert_optimized_same(oracle, plan)


def test_constant_does_not_cross_into_null_supplying_side(oracle, t, u):
    """t LEFT JOIN u ON a = x WHERE a = 1: u.x = 1 would be right inside the ON clause, but
    the rule works on inner blocks only and must never filter u's rows above the join, where
    the NULL-extended rows of t would be lost."""
    a, b = scan(t), scan(u)
    plan = filter_(join(a, b, "left", eq(col(a, "a"), col(b, "x"))), eq(col(a, "a"), lit(1)))
    result = assert_optimized_same(oracle, plan)
    filters = [n for n in walk_plan(result) if isinstance(n, Filter)]
    assert not any("x" in str(f.predicate) for f in filters)


def test_constant_above_outer_join_leaf_stays_above_it(oracle, t, u, v):
    """An inner block over (t LEFT JOIN u) and v: the constant reaches u's column only as a
    filter above the left join (it rejects the NULL-extended rows, as the written equality
    with v's column already does), never inside u."""
    a, b, c = scan(t), scan(u), scan(v)
    left = join(a, b, "left", eq(col(a, "a"), col(b, "x")))
    plan = filter_(cross(left, c), and_(eq(col(b, "y"), col(c, "k")), eq(col(c, "k"), lit(10))))
    result = assert_optimized_same(oracle, plan)
    assert _scan_filters(result, "u") == []
    assert _scan_filters(result, "v") == ["(k = 10)"]


def test_results_unchanged_on_a_cycle_of_equalities(oracle, t, u, v):
    a, b, c = scan(t), scan(u), scan(v)
    plan = filter_(cross(a, b, c), and_(eq(col(a, "a"), col(b, "x")),
                                        eq(col(b, "x"), col(c, "k")),
                                        eq(col(a, "b"), col(b, "y"))))
    result = assert_optimized_same(oracle, plan)
    assert [j.kind for j in walk_plan(result) if isinstance(j, Join)] == ["inner", "inner"]


def test_joins_carry_one_equality_per_class():
    """Four relations on one key: the graph is a clique, but each join gets a spanning set
    (one equality of the class), so no estimate counts a = b, b = c and a = c together."""
    scans = [scan(table(n, r, k=T.INT64)) for n, r in
             (("a", 1000), ("b", 100), ("c", 10), ("d", 10000))]
    keys = [col(s, "k") for s in scans]
    plan = filter_(cross(*scans), and_(*(eq(keys[i], keys[i + 1]) for i in range(3))))
    result = optimize(plan).plan
    joins = [n for n in walk_plan(result) if isinstance(n, Join)]
    assert len(joins) == 3
    assert all(len(conjuncts(j.condition)) == 1 for j in joins)
    # the spanning equalities still equate every key
    classes = EquivalenceClasses.from_conjuncts([j.condition for j in joins])  # type: ignore
    assert len({classes.find(k.cid) for k in keys}) == 1


def test_streaming_adds_constants_but_no_edges():
    a = scan(table("a", 100, k=T.INT64))
    b = scan(table("b", 100, k=T.INT64))
    c = scan(table("c", 100, k=T.INT64))
    plan = filter_(cross(a, b, c), and_(eq(col(a, "k"), col(b, "k")),
                                        eq(col(b, "k"), col(c, "k")), eq(col(a, "k"), lit(3))))
    result = _pushed(plan, {"execution.runtime-mode": "streaming"})
    assert frozenset({col(a, "k").cid, col(c, "k").cid}) not in _equalities(result)
    assert _scan_filters(result, "c") == ["(k = 3)"]
