"""Constant folding and boolean simplification (three-valued logic)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa

from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.folding import fold
from flowsql.optimizer.rules.simplify_expressions import simplify_expressions
from flowsql.planner import types as T
from flowsql.planner.expressions import Case, Cast, Literal, render
from flowsql.planner.logical import Filter, Scan

from .planbuilder import and_, call, col, eq, filter_, gt, lit, not_, or_, scan

NULL_BOOL = Literal(None, T.BOOL)


def test_date_minus_interval_folds_to_date():
    e = call("subtract", Literal(dt.date(1998, 12, 1), T.DATE), Literal((0, 90, 0), T.INTERVAL),
             dtype=T.DATE)
    assert fold(e) == Literal(dt.date(1998, 9, 2), T.DATE)


def test_date_plus_months_clamps_to_month_end():
    e = call("add", Literal(dt.date(1995, 1, 31), T.DATE), Literal((1, 0, 0), T.INTERVAL),
             dtype=T.DATE)
    assert fold(e) == Literal(dt.date(1995, 2, 28), T.DATE)


def test_decimal_arithmetic_keeps_declared_type():
    d = pa.decimal128(3, 2)
    e = call("add", Literal(decimal.Decimal("0.06"), d), Literal(decimal.Decimal("0.01"), d),
             dtype=pa.decimal128(4, 2))
    folded = fold(e)
    assert folded == Literal(decimal.Decimal("0.07"), pa.decimal128(4, 2))


def test_integer_arithmetic_and_comparison():
    assert fold(gt(call("add", lit(1), lit(10), dtype=T.INT64), lit(10))) == lit(True)
    assert fold(call("modulo", lit(-7), lit(3), dtype=T.INT64)) == lit(-1)


def test_division_by_zero_is_left_to_runtime():
    e = call("divide", lit(1), lit(0), dtype=T.FLOAT64)
    assert fold(e) is e


def test_null_propagates_through_strict_calls():
    assert fold(eq(Literal(None, T.INT64), lit(1))) == NULL_BOOL


def test_and_or_with_constants(t):
    x = gt(col(scan(t), "a"), lit(1))
    assert fold(and_(x, lit(True))) is x
    assert fold(and_(x, lit(False))) == lit(False)
    assert fold(or_(x, lit(True))) == lit(True)
    assert fold(or_(x, lit(False))) is x
    # x AND NULL is FALSE or NULL depending on x: it must stay
    assert render(fold(and_(x, NULL_BOOL))) == render(and_(x, NULL_BOOL))


def test_not_not_and_not_null():
    assert fold(not_(not_(lit(True)))) == lit(True)
    assert fold(not_(NULL_BOOL)) == NULL_BOOL


def test_common_conjuncts_factor_out_of_or(t, u):
    a, b = scan(t), scan(u)
    join_pred = eq(col(a, "a"), col(b, "x"))
    e = or_(and_(join_pred, gt(col(a, "b"), lit(1))), and_(join_pred, gt(col(b, "y"), lit(2))))
    assert render(fold(e)) == "((a = x) AND ((b > 1) OR (y > 2)))"


def test_case_with_constant_conditions(t):
    x = col(scan(t), "a")
    e = Case((lit(False), lit(True)), (lit(1), x), lit(3), T.INT64)
    assert fold(e) is x


def test_cast_of_literal_folds():
    assert fold(Cast(Literal("1995-03-15", T.STRING), T.DATE)) == Literal(dt.date(1995, 3, 15), T.DATE)
    assert fold(Cast(lit(5), pa.decimal128(12, 2))) == Literal(decimal.Decimal("5.00"),
                                                               pa.decimal128(12, 2))


def test_rule_folds_scan_filter_and_drops_true_filter(t):
    s = scan(t)
    plan = filter_(Scan(s.table, s.fields, (gt(col(s, "a"), call("add", lit(1), lit(2), dtype=T.INT64)),)),
                   and_(lit(True), lit(True)))
    result = simplify_expressions(plan, OptimizerContext())
    assert isinstance(result, Scan) and not isinstance(result, Filter)
    assert render(result.filters[0]) == "(a > 3)"


def test_same_named_columns_of_a_self_join_stay_distinct(t):
    """(n1 = 'x' AND n2 = 'y') OR (n1 = 'y' AND n2 = 'x') has no common conjunct, although
    both columns render as 's' (TPC-H Q7)."""
    n1, n2 = col(scan(t), "s"), col(scan(t), "s")
    e = or_(and_(eq(n1, lit("x")), eq(n2, lit("y"))), and_(eq(n1, lit("y")), eq(n2, lit("x"))))
    assert fold(e) is e
