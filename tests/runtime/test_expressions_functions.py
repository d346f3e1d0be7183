"""Evaluator function families against DuckDB: strings, math, date/time, casts."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Cast, Literal
from flowsql.runtime.expressions import evaluate_constant
from tests.harness.expressions import call, col, duck, evaluate, lit, same

S = T.STRING
D152 = pa.decimal128(15, 2)
INTERVAL = T.INTERVAL

STRINGS = [
    (call("upper", S, col("s")), "upper(s)"),
    (call("lower", S, col("s")), "lower(s)"),
    (call("length", T.INT64, col("s")), "length(s)"),
    (call("reverse", S, col("s")), "reverse(s)"),
    (call("trim", S, col("s")), "trim(s)"),
    (call("ltrim", S, col("s")), "ltrim(s)"),
    (call("rtrim", S, col("s")), "rtrim(s)"),
    (call("concat", S, col("s"), lit("-"), col("t")), "concat(s, '-', t)"),
    (call("like", T.BOOL, col("s"), lit("%l%")), "s LIKE '%l%'"),
    (call("like", T.BOOL, col("s"), lit("h_llo")), "s LIKE 'h_llo'"),
    (call("like", T.BOOL, col("s"), lit("a%b\\_c\\d")), "s LIKE 'a%b\\_c\\d'"),
    (call("like", T.BOOL, col("s"), lit("a!%b!_c%"), lit("!")), "s LIKE 'a!%b!_c%' ESCAPE '!'"),
    (call("ilike", T.BOOL, col("s"), lit("HÉ%")), "s ILIKE 'HÉ%'"),
    (call("like", T.BOOL, col("s"), col("t")), "s LIKE t"),
    (call("substring", S, col("s"), lit(2), lit(3)), "substring(s, 2, 3)"),
    (call("substring", S, col("s"), lit(0), lit(3)), "substring(s, 0, 3)"),
    (call("substring", S, col("s"), lit(-3), lit(2)), "substring(s, -3, 2)"),
    (call("substring", S, col("s"), lit(-8), lit(4)), "substring(s, -8, 4)"),
    (call("substring", S, col("s"), lit(3), lit(-2)), "substring(s, 3, -2)"),
    (call("substring", S, col("s"), lit(-2), lit(-2)), "substring(s, -2, -2)"),
    (call("substring", S, col("s"), lit(3)), "substring(s, 3)"),
    (call("substring", S, col("s"), col("k"), lit(2)), "substring(s, k, 2)"),
    (call("replace", S, col("s"), lit("l"), lit("LL")), "replace(s, 'l', 'LL')"),
    (call("replace", S, col("s"), lit(""), lit("x")), "replace(s, '', 'x')"),
    (call("strpos", T.INT64, col("s"), lit("l")), "strpos(s, 'l')"),
    (call("strpos", T.INT64, col("s"), col("t")), "strpos(s, t)"),
    (call("starts_with", T.BOOL, col("s"), lit("he")), "starts_with(s, 'he')"),
    (call("ends_with", T.BOOL, col("s"), lit("ld")), "ends_with(s, 'ld')"),
    (call("contains", T.BOOL, col("s"), lit("l")), "contains(s, 'l')"),
    (call("regexp_matches", T.BOOL, col("s"), lit("^h.l+o$")), "regexp_matches(s, '^h.l+o$')"),
    (call("left", S, col("s"), lit(2)), "left(s, 2)"),
    (call("left", S, col("s"), lit(-2)), "left(s, -2)"),
    (call("right", S, col("s"), lit(3)), "right(s, 3)"),
    (call("right", S, col("s"), lit(-3)), "right(s, -3)"),
    (call("lpad", S, col("s"), lit(8), lit("xy")), "lpad(s, 8, 'xy')"),
    (call("rpad", S, col("s"), lit(3), lit(".")), "rpad(s, 3, '.')"),
    (call("repeat", S, col("t"), lit(3)), "repeat(t, 3)"),
    (call("repeat", S, col("t"), col("k")), "repeat(t, k)"),
    (call("split_part", S, col("s"), lit("l"), lit(2)), "split_part(s, 'l', 2)"),
    (call("split_part", S, col("s"), lit("l"), lit(-1)), "split_part(s, 'l', -1)"),
    (call("split_part", S, col("s"), lit("l"), lit(9)), "split_part(s, 'l', 9)"),
]

MATH = [
    (call("abs", T.INT64, col("i")), "abs(i)"),
    (call("abs", D152, col("d")), "abs(d)"),
    (call("round", T.FLOAT64, col("f")), "round(f)"),
    (call("round", D152, col("d"), lit(1)), "round(d, 1)"),
    (call("round", D152, col("d")), "round(d)"),
    (call("round", T.FLOAT64, col("f"), lit(-1)), "round(f, -1)"),
    (call("round", T.INT64, col("i"), lit(-1)), "round(i, -1)"),
    (call("floor", pa.decimal128(13, 0), col("d")), "floor(d)"),
    (call("ceil", pa.decimal128(13, 0), col("d")), "ceil(d)"),
    (call("floor", T.FLOAT64, col("f")), "floor(f)"),
    (call("sqrt", T.FLOAT64, Cast(col("i"), T.FLOAT64)), "sqrt(i)"),
    (call("power", T.FLOAT64, col("f"), lit(2.0)), "power(f, 2)"),
    (call("ln", T.FLOAT64, col("f")), "ln(f)"),
    (call("log10", T.FLOAT64, col("f")), "log10(f)"),
    (call("exp", T.FLOAT64, col("f")), "exp(f)"),
    (call("sign", T.INT64, col("d")), "sign(d)"),
    (call("sign", T.INT64, col("i")), "sign(i)"),
]

TEMPORAL = [
    (call("extract_year", T.INT64, col("dt")), "extract(year FROM dt)"),
    (call("extract_quarter", T.INT64, col("dt")), "extract(quarter FROM dt)"),
    (call("extract_month", T.INT64, col("ts")), "extract(month FROM ts)"),
    (call("extract_day", T.INT64, col("dt")), "extract(day FROM dt)"),
    (call("extract_hour", T.INT64, col("ts")), "extract(hour FROM ts)"),
    (call("extract_hour", T.INT64, col("dt")), "extract(hour FROM dt)"),
    (call("extract_minute", T.INT64, col("ts")), "extract(minute FROM ts)"),
    (call("extract_second", T.INT64, col("ts")), "extract(second FROM ts)"),
    (call("extract_dow", T.INT64, col("dt")), "extract(dow FROM dt)"),
    (call("extract_doy", T.INT64, col("dt")), "extract(doy FROM dt)"),
    (call("extract_week", T.INT64, col("dt")), "extract(week FROM dt)"),
    (call("extract_epoch", T.FLOAT64, col("ts")), "extract(epoch FROM ts)"),
    (call("extract_epoch", T.FLOAT64, col("dt")), "extract(epoch FROM dt)"),
    (call("date_trunc", T.DATE, lit("month"), col("dt")), "date_trunc('month', dt)"),
    (call("date_trunc", T.DATE, lit("week"), col("dt")), "date_trunc('week', dt)"),
    (call("date_trunc", T.DATE, lit("quarter"), col("dt")), "date_trunc('quarter', dt)"),
    (call("date_trunc", pa.timestamp("us"), lit("hour"), col("ts")), "date_trunc('hour', ts)"),
    (call("add", T.DATE, col("dt"), Literal((1, 0, 0), INTERVAL)), "dt + INTERVAL 1 MONTH"),
    (call("subtract", T.DATE, col("dt"), Literal((1, 0, 0), INTERVAL)), "dt - INTERVAL 1 MONTH"),
    (call("add", T.DATE, col("dt"), Literal((14, 3, 0), INTERVAL)),
     "dt + INTERVAL 14 MONTH + INTERVAL 3 DAY"),
    (call("add", T.DATE, Literal((0, 10, 0), INTERVAL), col("dt")), "INTERVAL 10 DAY + dt"),
    (call("add", pa.timestamp("us"), col("ts"), Literal((1, 0, 3600 * 10**9), INTERVAL)),
     "ts + INTERVAL 1 MONTH + INTERVAL 1 HOUR"),
    (call("subtract", pa.timestamp("us"), col("ts"), Literal((0, 2, 90 * 10**9), INTERVAL)),
     "ts - INTERVAL 2 DAY - INTERVAL 90 SECOND"),
    (call("add", T.DATE, col("dt"), col("k")), "dt + k"),
    (call("subtract", T.DATE, col("dt"), lit(30)), "dt - 30"),
    (call("subtract", T.INT64, col("dt"), lit(dt.date(2000, 1, 1))), "dt - DATE '2000-01-01'"),
]

CASTS = [
    (Cast(col("i"), S), "CAST(i AS VARCHAR)"),
    (Cast(col("d"), S), "CAST(d AS VARCHAR)"),
    (Cast(col("f"), S), "CAST(f AS VARCHAR)"),
    (Cast(col("b"), S), "CAST(b AS VARCHAR)"),
    (Cast(col("dt"), S), "CAST(dt AS VARCHAR)"),
    # A TIMESTAMP(6) prints six fraction digits, trailing zeros included (Flink); DuckDB
    # drops trailing zeros, so its side formats the fraction explicitly.
    (Cast(col("ts"), S), "strftime(ts, '%Y-%m-%d %H:%M:%S.%f')"),
    (Cast(col("d"), pa.decimal128(10, 1)), "CAST(d AS DECIMAL(10, 1))"),
    (Cast(col("d"), pa.decimal128(20, 4)), "CAST(d AS DECIMAL(20, 4))"),
    # A fraction cast to an integer truncates toward zero (Flink); DuckDB rounds, so its
    # side truncates explicitly.
    (Cast(col("d"), T.INT64), "CAST(trunc(d) AS BIGINT)"),
    (Cast(call("nullif", T.FLOAT64, col("f"), lit(1e20)), T.INT64),
     "CAST(trunc(nullif(f, 1e20)) AS BIGINT)"),
    (Cast(call("nullif", T.FLOAT64, col("f"), lit(1e20)), pa.int16()),
     "CAST(trunc(nullif(f, 1e20)) AS SMALLINT)"),
    (Cast(col("f"), pa.decimal128(30, 1)), "CAST(f AS DECIMAL(30, 1))"),
    (Cast(col("d"), T.FLOAT64), "CAST(d AS DOUBLE)"),
    (Cast(col("i"), pa.decimal128(20, 2)), "CAST(i AS DECIMAL(20, 2))"),
    (Cast(col("k"), T.INT64), "CAST(k AS BIGINT)"),
    (Cast(col("ts"), T.DATE), "CAST(ts AS DATE)"),
    (Cast(col("dt"), pa.timestamp("us")), "CAST(dt AS TIMESTAMP)"),
]


@pytest.mark.parametrize(("expr", "sql"), STRINGS + MATH + TEMPORAL + CASTS,
                         ids=[sql for _, sql in STRINGS + MATH + TEMPORAL + CASTS])
def test_matches_duckdb(expr, sql):  # type: ignore[no-untyped-def]
    ours = evaluate(expr).to_pylist()
    theirs = duck(sql, expr.dtype)
    assert same(ours, theirs), (ours, theirs)


STRING_CASTS = [
    ("42", T.INT64, 42), (" 12 ", T.INT32, 12),
    ("1e3", T.FLOAT64, 1000.0), ("1.235", pa.decimal128(10, 2), Decimal("1.24")),
    ("-1.235", pa.decimal128(10, 2), Decimal("-1.24")), ("  7 ", pa.decimal128(5, 1), Decimal("7.0")),
    ("2024-01-05", T.DATE, dt.date(2024, 1, 5)), (" 2024-01-05 ", T.DATE, dt.date(2024, 1, 5)),
    ("2024-01-05 10:00:00", pa.timestamp("us"), dt.datetime(2024, 1, 5, 10)),
    ("true", T.BOOL, True), ("T", T.BOOL, True), ("no", T.BOOL, False), ("0", T.BOOL, False),
]


@pytest.mark.parametrize(("text", "target", "expected"), STRING_CASTS)
def test_string_casts_like_duckdb(text: str, target: pa.DataType, expected: object) -> None:
    column = Cast(call("concat", S, lit(text)), target)
    assert evaluate(column).to_pylist()[0] == expected
    sql_type = T.sql_name(target).replace("TIMESTAMP(6)", "TIMESTAMP")
    assert duck(f"CAST('{text}' AS {sql_type})")[0] == expected


@pytest.mark.parametrize(("text", "target", "expected"),
                         [("2.5", T.INT64, 2), ("-2.5", T.INT64, -2), (" 7.99 ", T.INT32, 7),
                          ("-0.5", pa.int8(), 0)])
def test_string_with_fraction_to_integer_truncates(text: str, target: pa.DataType,
                                                   expected: int) -> None:
    """Flink truncates the fraction; DuckDB rounds, so its side truncates explicitly."""
    column = Cast(call("concat", S, lit(text)), target)
    assert evaluate(column).to_pylist()[0] == expected
    sql_type = T.sql_name(target)
    assert duck(f"CAST(trunc(CAST('{text}' AS DECIMAL(38, 12))) AS {sql_type})")[0] == expected


@pytest.mark.parametrize(("text", "target"), [("abc", T.INT64), ("2024-13-01", T.DATE),
                                              ("maybe", T.BOOL), ("1x", pa.decimal128(5, 2))])
def test_failed_cast_names_value_and_type(text: str, target: pa.DataType) -> None:
    expr = Cast(call("concat", S, lit(text)), target)
    with pytest.raises(ExecutionError, match=f"'{text}'.*{T.sql_name(target)[:4]}"):
        evaluate(expr)


def test_out_of_range_casts_fail() -> None:
    with pytest.raises(ExecutionError):
        evaluate_constant(Cast(call("add", T.INT64, lit(300), lit(0)), pa.int8()))
    with pytest.raises(ExecutionError):
        evaluate_constant(Cast(call("add", T.FLOAT64, lit(1e300), lit(0.0)), T.INT32))


@pytest.mark.parametrize(("value", "target", "shown"),
                         [(1e20, T.INT64, "1e+20"), (32768.5, pa.int16(), "32768.5"),
                          (float("nan"), T.INT32, "nan"), (-129.0, pa.int8(), "-129.0")])
def test_out_of_range_cast_names_the_value(value: float, target: pa.DataType,
                                           shown: str) -> None:
    expr = Cast(call("add", T.FLOAT64, col("f"), lit(value)), target)
    with pytest.raises(ExecutionError, match=rf"cannot cast {re.escape(shown)}"):
        evaluate(Cast(call("add", T.FLOAT64, lit(value), lit(0.0)), target))
    with pytest.raises(ExecutionError, match=T.sql_name(target)):
        evaluate(expr)


def test_month_arithmetic_clamps_the_day() -> None:
    plus = call("add", T.DATE, lit(dt.date(2024, 1, 31)), Literal((1, 0, 0), INTERVAL))
    assert evaluate_constant(plus) == dt.date(2024, 2, 29)
    minus = call("subtract", T.DATE, lit(dt.date(2024, 3, 31)), Literal((13, 0, 0), INTERVAL))
    assert evaluate_constant(minus) == dt.date(2023, 2, 28)


def test_negated_interval_and_interval_sum() -> None:
    neg = call("negate", INTERVAL, Literal((1, 2, 3), INTERVAL))
    assert evaluate_constant(neg) == pa.MonthDayNano([-1, -2, -3])
    total = call("add", INTERVAL, Literal((1, 2, 3), INTERVAL), Literal((0, 5, 0), INTERVAL))
    assert evaluate_constant(total) == pa.MonthDayNano([1, 7, 3])
