"""UDF hints change plans the way they say: predicate ordering by rank, predicate
migration above a selective join, and non-deterministic calls left where they are.

Plans come from the plan builder with UdfCall expressions made by hand (no registry)."""

from __future__ import annotations

import pyarrow as pa

from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.rules.migrate_predicates import migrate_predicates
from flowsql.optimizer.rules.order_predicates import order_predicates, rank
from flowsql.planner import types as T
from flowsql.planner.explain import explain_logical
from flowsql.planner.expressions import Expr, UdfCall, conjuncts, render
from flowsql.planner.logical import Filter, Join, LogicalPlan, Scan, walk_plan
from flowsql.planner.udf import FunctionHints, UserFunction

from .planbuilder import and_, col, eq, filter_, gt, join, lit, scan, table

ORDERS = table("orders", 100_000, o_key=T.INT64, o_cust=T.INT64, o_note=T.STRING)
NATION = table("nation", 25, n_key=T.INT64, n_name=T.STRING)


def udf(name: str, *args: Expr, **hints: object) -> UdfCall:
    function = UserFunction(name, f"tests.udfs.scalars.{name}", result_type=T.BOOL,
                            hints=FunctionHints(**hints))  # type: ignore[arg-type]
    return UdfCall(function, tuple(args), T.BOOL)


def order(plan: LogicalPlan) -> LogicalPlan:
    return order_predicates(plan, OptimizerContext())


def migrate(plan: LogicalPlan) -> LogicalPlan:
    return migrate_predicates(plan, OptimizerContext())


def filter_order(plan: LogicalPlan) -> list[str]:
    top = next(n for n in walk_plan(plan) if isinstance(n, Filter))
    return [render(c) for c in conjuncts(top.predicate)]


def test_expensive_predicate_goes_after_a_cheap_one() -> None:
    o = scan(ORDERS)
    slow = udf("slow", col(o, "o_note"), cost_per_row=100.0, selectivity=0.5)
    cheap = gt(col(o, "o_key"), lit(10))
    plan = order(filter_(o, and_(slow, cheap)))
    assert filter_order(plan) == ["(o_key > 10)", "slow(o_note)"]


def test_selectivity_hint_can_put_a_udf_first() -> None:
    """A UDF keeping 0.1% of rows at cost 1.2 ranks (0.001 - 1) / 1.2 = -0.83, below a
    range predicate's (1/3 - 1) / 1 = -0.67, so it goes first; at cost 50 it ranks -0.02
    and goes last."""
    o = scan(ORDERS)
    sharp = udf("sharp", col(o, "o_note"), cost_per_row=1.2, selectivity=0.001)
    wide = gt(col(o, "o_key"), lit(10))
    plan = order(filter_(o, and_(wide, sharp)))
    assert filter_order(plan) == ["sharp(o_note)", "(o_key > 10)"]
    # the same function declared costly goes last again
    costly = udf("sharp", col(o, "o_note"), cost_per_row=50.0, selectivity=0.001)
    plan = order(filter_(o, and_(wide, costly)))
    assert filter_order(plan) == ["(o_key > 10)", "sharp(o_note)"]


def test_ranks_follow_the_formula() -> None:
    o = scan(ORDERS)
    f = udf("f", col(o, "o_note"), cost_per_row=50.0, selectivity=0.1)
    assert rank(f, o, OptimizerContext()) == (0.1 - 1) / 50.0


def test_non_deterministic_conjunct_keeps_its_place() -> None:
    o = scan(ORDERS)
    dice = udf("dice", col(o, "o_key"), deterministic=False, cost_per_row=1000.0)
    slow = udf("slow", col(o, "o_note"), cost_per_row=100.0)
    cheap = gt(col(o, "o_key"), lit(10))
    plan = order(filter_(o, and_(slow, dice, cheap)))
    # slow stays before dice (the rows dice sees are unchanged); cheap stays after it
    assert filter_order(plan) == ["slow(o_note)", "dice(o_key)", "(o_key > 10)"]


def test_scan_filters_are_ordered_too() -> None:
    o = scan(ORDERS)
    slow = udf("slow", col(o, "o_note"), cost_per_row=100.0)
    cheap = gt(col(o, "o_key"), lit(10))
    s = Scan(o.table, o.fields, (slow, cheap))
    out = order(s)
    assert isinstance(out, Scan) and [render(f) for f in out.filters] == [
        "(o_key > 10)", "slow(o_note)"]


def _orders_nation(hints: dict[str, object], selective: bool = True
                   ) -> tuple[LogicalPlan, UdfCall]:
    """orders joined to the one nation named 'x' (a join keeping few orders; every order
    when not ``selective``), with the UDF predicate over orders where pushdown left it:
    below the join."""
    o, n = scan(ORDERS), scan(NATION)
    expensive = udf("expensive", col(o, "o_note"), **hints)
    nation = filter_(n, eq(col(n, "n_name"), lit("x"))) if selective else n
    plan = join(filter_(o, expensive), nation, "inner", eq(col(o, "o_cust"), col(n, "n_key")))
    return plan, expensive


def test_expensive_predicate_migrates_above_a_selective_join() -> None:
    plan, expensive = _orders_nation({"cost_per_row": 100.0})
    out = migrate(plan)
    assert isinstance(out, Filter) and out.predicate is expensive
    assert isinstance(out.input, Join) and isinstance(out.input.left, Scan)
    text = explain_logical(out)
    assert text.splitlines()[0] == ("Filter expensive(o_note) hints: "
                                    "expensive(cost_per_row=100)")


def test_expensive_predicate_stays_below_a_join_that_keeps_every_row() -> None:
    plan, _ = _orders_nation({"cost_per_row": 100.0}, selective=False)
    assert migrate(plan) is plan


def test_non_deterministic_predicate_never_migrates() -> None:
    plan, _ = _orders_nation({"cost_per_row": 1000.0, "deterministic": False})
    assert migrate(plan) is plan


def test_migration_needs_a_join_that_removes_rows() -> None:
    """Under a join that multiplies rows, the predicate is cheaper below."""
    o, n = scan(ORDERS), scan(NATION)
    expensive = udf("expensive", col(n, "n_name"), cost_per_row=100.0)
    plan = join(filter_(n, expensive), o, "inner", eq(col(o, "o_cust"), col(n, "n_key")))
    assert migrate(plan) is plan


def test_hint_text_lists_only_given_hints() -> None:
    o = scan(ORDERS)
    plain = udf("plain", col(o, "o_note"))
    hinted = udf("hinted", col(o, "o_note"), selectivity=0.1, cost_per_row=50.0)
    text = explain_logical(filter_(o, and_(plain, hinted)))
    assert text.splitlines()[0].endswith(" hints: hinted(selectivity=0.1, cost_per_row=50)")
    assert pa.types.is_boolean(plain.dtype)


def test_built_in_conjuncts_keep_their_order() -> None:
    """Without a user function the order changes nothing at run time: plans stay as is."""
    o = scan(ORDERS)
    plan = filter_(o, and_(gt(col(o, "o_key"), lit(10)), eq(col(o, "o_cust"), lit(3))))
    assert order(plan) is plan
