"""Evaluator core against DuckDB: arithmetic, comparisons, logic, conditionals, the public
entry points and their contracts."""

from __future__ import annotations

from decimal import Decimal, localcontext

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError, PlanError
from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, Case, Cast, Literal
from flowsql.planner.schema import Field
from flowsql.runtime.expressions import compile_expr, compile_predicate, evaluate_constant
from tests.harness.expressions import BATCH, FIELDS, call, col, duck, evaluate, lit, same

D152 = pa.decimal128(15, 2)

CASES = [
    # arithmetic
    (call("add", T.INT64, col("i"), col("j")), "i + j"),
    (call("subtract", T.INT64, col("i"), lit(10)), "i - 10"),
    (call("multiply", T.INT64, col("i"), col("j")), "i * j"),
    (call("divide", T.FLOAT64, col("i"), col("j")), "i / j"),
    (call("divide", T.FLOAT64, col("i"), lit(0)), "i / 0"),
    (call("divide", T.FLOAT64, col("f"), col("f")), "f / f"),
    (call("modulo", T.INT64, col("i"), col("j")), "i % j"),
    (call("modulo", T.INT64, lit(-7), col("j")), "(-7) % j"),
    (call("modulo", T.FLOAT64, col("f"), lit(2.0)), "f % 2.0::double"),
    (call("modulo", T.FLOAT64, col("f"), lit(0.0)), "f % 0.0::double"),
    (call("modulo", pa.decimal128(15, 2), col("d"), Literal(Decimal("0.20"), pa.decimal128(3, 2))),
     "d % 0.20"),
    (call("negate", T.INT64, col("i")), "-i"),
    (call("negate", D152, col("d")), "-d"),
    (call("add", pa.decimal128(16, 2), col("d"), col("e")), "d + e"),
    (call("subtract", pa.decimal128(16, 2), col("d"), col("e")), "d - e"),
    (call("multiply", pa.decimal128(30, 4), col("d"), col("e")), "d * e"),
    (call("add", pa.decimal128(20, 2), col("d"), Cast(col("i"), pa.decimal128(19, 0))), "d + i"),
    (call("add", T.FLOAT64, col("f"), Cast(col("i"), T.FLOAT64)), "f + i"),
    # comparisons
    (call("eq", T.BOOL, col("i"), col("j")), "i = j"),
    (call("neq", T.BOOL, col("i"), lit(1)), "i <> 1"),
    (call("lt", T.BOOL, col("d"), col("e")), "d < e"),
    (call("lte", T.BOOL, col("s"), lit("hello")), "s <= 'hello'"),
    (call("gt", T.BOOL, col("dt"), lit(__import__("datetime").date(2000, 1, 1))),
     "dt > DATE '2000-01-01'"),
    (call("gte", T.BOOL, col("f"), lit(1.5)), "f >= 1.5"),
    (call("is_distinct_from", T.BOOL, col("i"), col("j")), "i IS DISTINCT FROM j"),
    (call("is_not_distinct_from", T.BOOL, col("i"), col("j")), "i IS NOT DISTINCT FROM j"),
    (call("is_distinct_from", T.BOOL, col("i"), Literal(None, T.INT64)),
     "i IS DISTINCT FROM NULL"),
    # logic
    (call("and", T.BOOL, col("b"), col("c")), "b AND c"),
    (call("or", T.BOOL, col("b"), col("c")), "b OR c"),
    (call("and", T.BOOL, col("b"), col("c"), call("gt", T.BOOL, col("i"), lit(0))),
     "b AND c AND i > 0"),
    (call("or", T.BOOL, col("b"), Literal(None, T.BOOL)), "b OR NULL"),
    (call("and", T.BOOL, col("b"), Literal(None, T.BOOL)), "b AND NULL"),
    (call("not", T.BOOL, col("c")), "NOT c"),
    (call("is_null", T.BOOL, col("i")), "i IS NULL"),
    (call("is_not_null", T.BOOL, col("s")), "s IS NOT NULL"),
    (call("is_true", T.BOOL, col("b")), "b IS TRUE"),
    (call("is_false", T.BOOL, col("b")), "b IS FALSE"),
    (call("in_list", T.BOOL, col("i"), lit(1), lit(42)), "i IN (1, 42)"),
    (call("in_list", T.BOOL, col("i"), lit(1), Literal(None, T.INT64)), "i IN (1, NULL)"),
    (call("in_list", T.BOOL, col("i"), col("j"), lit(0)), "i IN (j, 0)"),
    (call("in_list", T.BOOL, col("s"), lit("hello"), lit("")), "s IN ('hello', '')"),
    (call("not", T.BOOL, call("in_list", T.BOOL, col("i"), lit(1), Literal(None, T.INT64))),
     "i NOT IN (1, NULL)"),
    # conditionals
    (Case((call("gt", T.BOOL, col("i"), lit(0)), call("is_null", T.BOOL, col("j"))),
          (lit("pos"), lit("nullj")), lit("other"), T.STRING),
     "CASE WHEN i > 0 THEN 'pos' WHEN j IS NULL THEN 'nullj' ELSE 'other' END"),
    (Case((col("b"),), (col("d"),), Literal(None, D152), D152), "CASE WHEN b THEN d END"),
    (Case((call("eq", T.BOOL, col("k"), Literal(0, T.INT32)),), (lit(0),),
          call("modulo", T.INT64, lit(10), Cast(col("k"), T.INT64)), T.INT64),
     "CASE WHEN k = 0 THEN 0 ELSE 10 % k END"),
    (call("coalesce", T.INT64, col("i"), col("j"), lit(-1)), "coalesce(i, j, -1)"),
    (call("nullif", T.INT64, col("i"), col("j")), "nullif(i, j)"),
    (call("nullif", T.INT64, col("i"), lit(0)), "nullif(i, 0)"),
    (call("greatest", T.INT64, col("i"), col("j")), "greatest(i, j)"),
    (call("least", T.STRING, col("s"), col("t")), "least(s, t)"),
]


@pytest.mark.parametrize(("expr", "sql"), CASES, ids=[sql for _, sql in CASES])
def test_matches_duckdb(expr, sql):  # type: ignore[no-untyped-def]
    ours = evaluate(expr).to_pylist()
    assert same(ours, duck(sql, expr.dtype)), (ours, duck(sql))


def test_decimal_sum_of_products_is_exact() -> None:
    # l_extendedprice * (1 - l_discount) * (1 + l_tax) with TPC-H types.
    one = Literal(Decimal("1"), pa.decimal128(1, 0))
    net = call("subtract", pa.decimal128(16, 2), one, col("e"))
    price = call("multiply", pa.decimal128(31, 4), col("d"), net)
    charge = call("multiply", pa.decimal128(38, 6), price,
                  call("add", pa.decimal128(16, 2), one, col("e")))
    ours = evaluate(charge).to_pylist()
    assert ours == duck("d * (1 - e) * (1 + e)")
    assert ours[0] == Decimal("1.50") * Decimal("0.94") * Decimal("1.06")


def test_decimal_beyond_38_digits_goes_through_decimal256() -> None:
    a = Field.fresh("a", pa.decimal128(32, 4))
    b = Field.fresh("b", pa.decimal128(16, 2))
    batch = pa.record_batch([pa.array([Decimal("12.5000"), Decimal("-1234567890123.4567")],
                                      pa.decimal128(32, 4)),
                             pa.array([Decimal("3.25"), Decimal("99999999999999.99")],
                                      pa.decimal128(16, 2))], names=["a", "b"])
    expr = call("multiply", pa.decimal128(38, 6), a.ref(), b.ref())
    out = compile_expr(expr, (a, b))(batch)
    assert out.type == pa.decimal128(38, 6)
    with localcontext() as exact:
        exact.prec = 60
        product = Decimal("-1234567890123.4567") * Decimal("99999999999999.99")
    assert out.to_pylist() == [Decimal("40.625000"), product]
    add = call("add", pa.decimal128(38, 2), Literal(Decimal("1"), pa.decimal128(38, 2)),
               Literal(Decimal("2.5"), pa.decimal128(38, 2)))
    assert evaluate_constant(add) == Decimal("3.50")


def test_decimal_overflow_is_an_execution_error() -> None:
    big = Literal(Decimal("9" * 30), pa.decimal128(38, 0))
    expr = call("multiply", pa.decimal128(38, 0), big, big)
    with pytest.raises(ExecutionError, match="overflow"):
        evaluate_constant(expr)


def test_integer_overflow_is_an_execution_error() -> None:
    expr = call("add", T.INT64, col("i"), lit(2**63 - 1))
    with pytest.raises(ExecutionError, match="overflow"):
        evaluate(expr)


def test_modulo_by_zero_is_an_execution_error() -> None:
    with pytest.raises(ExecutionError, match="division by zero"):
        evaluate(call("modulo", T.INT64, col("i"), lit(0)))
    with pytest.raises(ExecutionError, match="division by zero"):
        evaluate(call("modulo", D152, col("d"), Literal(Decimal("0.00"), D152)))


def test_result_type_is_exactly_the_planner_type() -> None:
    # length() of pyarrow is int32; the planner says BIGINT.
    out = evaluate(call("length", T.INT64, col("s")))
    assert out.type == T.INT64
    # A constant expression is broadcast to the batch length.
    out = evaluate(call("add", T.INT64, lit(1), lit(2)))
    assert out.to_pylist() == [3] * BATCH.num_rows
    # NULL-typed literal becomes a typed NULL column.
    out = evaluate(Literal(None, T.NULL))
    assert out.null_count == BATCH.num_rows
    out = compile_expr(Literal(None, T.NULL), FIELDS)(BATCH)
    assert len(out) == BATCH.num_rows


def test_predicate_treats_null_as_false() -> None:
    mask = compile_predicate(call("gt", T.BOOL, col("i"), lit(0)), FIELDS)(BATCH)
    assert mask.null_count == 0
    assert mask.to_pylist() == [True, False, False, False, True, True]
    assert BATCH.filter(mask).num_rows == 3


def test_missing_column_is_a_plan_error() -> None:
    stray = Field.fresh("ghost", T.INT64)
    with pytest.raises(PlanError, match="ghost"):
        compile_expr(call("add", T.INT64, stray.ref(), lit(1)), FIELDS)


def test_aggregates_never_reach_the_evaluator() -> None:
    with pytest.raises(PlanError):
        compile_expr(AggCall("sum", (col("i"),), T.INT64), FIELDS)


def test_evaluate_constant() -> None:
    assert evaluate_constant(call("multiply", T.INT64, lit(6), lit(7))) == 42
    assert evaluate_constant(call("in_list", T.BOOL, lit(3), lit(1), Literal(None, T.INT64))) \
        is None
    assert evaluate_constant(call("in_list", T.BOOL, lit(1), lit(1), Literal(None, T.INT64))) \
        is True
    assert evaluate_constant(call("concat", T.STRING, lit("a"), Literal(None, T.STRING),
                                  lit("b"))) == "ab"
    with pytest.raises(PlanError):
        evaluate_constant(call("add", T.INT64, col("i"), lit(1)))


def test_batches_with_offsets_and_empty_batches() -> None:
    expr = call("modulo", D152, col("d"), Literal(Decimal("0.20"), pa.decimal128(3, 2)))
    fn = compile_expr(expr, FIELDS)
    full = fn(BATCH).to_pylist()
    assert fn(BATCH.slice(2, 3)).to_pylist() == full[2:5]
    assert fn(BATCH.slice(0, 0)).to_pylist() == []
