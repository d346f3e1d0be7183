"""Rewrites never duplicate, merge or move a non-deterministic user function call, and
treat a deterministic one like a built-in (pushed down, deduplicated, folded at run time)."""

from __future__ import annotations

import pyarrow as pa

import flowsql
from flowsql.optimizer.folding import fold
from flowsql.planner import types as T
from flowsql.planner.expressions import Call, ColumnRef, Literal, UdfCall
from flowsql.planner.udf import FunctionHints, UserFunction


def _session() -> flowsql.Session:
    s = flowsql.connect()
    s.sql("CREATE FUNCTION next_id AS 'tests.udfs.scalars.next_id'")
    s.sql("CREATE FUNCTION times_two AS 'tests.udfs.scalars.times_two'")
    return s


def _optimized(s: flowsql.Session, query: str) -> str:
    text = s.sql("EXPLAIN " + query).explain()
    return text.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0].strip()


def test_filter_on_a_non_deterministic_column_stays_above_its_projection() -> None:
    plan = _optimized(_session(), "SELECT * FROM (SELECT next_id(a) AS n, times_two(a) AS t "
                                  "FROM (VALUES (1), (2)) v(a)) WHERE n > 0 AND t > 2")
    assert plan.splitlines() == [
        "Project [n, t]",
        "  Filter (n > 0)",
        "    Project [n := next_id(a), t := times_two(a)]",
        "      Filter (times_two(a) > 2)",
        "        Values [col0] rows=2"]


def test_non_deterministic_predicate_is_not_pushed_into_a_join_side() -> None:
    plan = _optimized(_session(),
                      "SELECT * FROM (VALUES (1), (2)) l(a) JOIN (VALUES (1), (3)) r(b) "
                      "ON a = b WHERE next_id(a) > 0 AND times_two(b) > 0")
    lines = [line.strip() for line in plan.splitlines()]
    # EXPLAIN notes the hints a filter's user functions carry after the predicate
    impure = "Filter (next_id(a) > 0) hints: next_id(deterministic=false)"
    assert impure in lines
    join = next(i for i, line in enumerate(lines) if line.startswith("InnerJoin")
                or line.startswith("Join"))
    assert lines.index(impure) < join
    assert lines.index("Filter (times_two(b) > 0)") > join


def _call(deterministic: bool) -> UdfCall:
    function = UserFunction("f", "tests.udfs.scalars.is_even", result_type=T.BOOL,
                            hints=FunctionHints(deterministic=deterministic))
    return UdfCall(function, (ColumnRef(1, "x", T.INT64),), T.BOOL)


def test_folding_keeps_both_calls_of_a_non_deterministic_function() -> None:
    changing, same = _call(False), _call(True)
    assert fold(Call("and", (changing, changing), T.BOOL)) == Call("and", (changing, changing),
                                                                  T.BOOL)
    assert fold(Call("and", (same, same), T.BOOL)) == same
    # (f AND g) OR (f AND h) -> f AND (g OR h) only for a deterministic f
    g, h = (Call("gt", (ColumnRef(1, "x", T.INT64), Literal(v, T.INT64)), T.BOOL)
            for v in (1, 2))
    either = Call("or", (Call("and", (changing, g), T.BOOL),
                         Call("and", (changing, h), T.BOOL)), T.BOOL)
    assert fold(either) == either
    factored = fold(Call("or", (Call("and", (same, g), T.BOOL),
                                Call("and", (same, h), T.BOOL)), T.BOOL))
    assert factored == Call("and", (same, Call("or", (g, h), T.BOOL)), T.BOOL)


def test_constant_arguments_fold_only_a_deterministic_call() -> None:
    s = _session()
    got = s.sql("SELECT times_two(21) AS t, next_id(1) AS n FROM (VALUES (1), (2), (3)) v(a)"
                ).to_arrow()
    assert got.column("t").to_pylist() == [42, 42, 42]
    ids = got.column("n").to_pylist()
    assert len(set(ids)) == 3 and got.column("n").type == pa.int64()
