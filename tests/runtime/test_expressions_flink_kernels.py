"""Kernels of Flink's functions called directly, with column-valued option arguments (a
pattern, separator, unit count or bit length per row), which take the per-distinct-value
path instead of the single-kernel one; hand-checked values."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Literal
from flowsql.runtime.expressions import evaluate_constant
from flowsql.runtime.expressions.date_format import strptime_format
from flowsql.runtime.expressions.string_functions import named_groups
from tests.harness.expressions import call, col, evaluate, lit

S = T.STRING


def test_split_index_with_a_separator_per_row() -> None:
    # s: "hello", "Héllo wörld", NULL, "", "  pad  ", "a%b_c\\d"; t: "l", "wö", "x", NULL, ...
    expr = call("split_index", S, col("s"), col("t"), lit(1))
    assert evaluate(expr).to_pylist() == ["", "rld", None, None, "  ", "b_c\\d"]


def test_regexp_extract_with_a_group_per_row() -> None:
    expr = call("regexp_extract", S, col("s"), lit("(.)(l+)"), col("k"))
    # k: 7, -7, 3, 2, NULL, 0 -> groups 7 and -7 do not exist
    with pytest.raises(ExecutionError, match="group 7 does not exist"):
        evaluate(expr)
    expr = call("regexp_extract", S, col("s"), lit("(.)(l+)"),
                call("nullif", T.INT64, call("abs", T.INT64, col("j")), lit(9)))
    # j: 3, 2, 5, NULL, -4, 9 -> groups 3, 2, 5, NULL, 4, NULL
    with pytest.raises(ExecutionError, match="group 3 does not exist"):
        evaluate(expr)
    expr = call("regexp_extract", S, col("s"), lit("(.)(l+)"),
                call("nullif", T.INT64, col("k"), lit(7)))
    with pytest.raises(ExecutionError, match="group -7 does not exist"):
        evaluate(expr)


def test_regexp_extract_groups() -> None:
    two = call("regexp_extract", S, col("s"), lit("(.)(l+)"), lit(2))
    assert evaluate(two).to_pylist() == ["ll", "ll", None, None, None, None]
    whole = call("regexp_extract", S, col("s"), lit("[^(]l+o"))
    assert evaluate(whole).to_pylist() == ["ello", "éllo", None, None, None, None]


def test_named_groups_skip_escapes_classes_and_non_capturing_groups() -> None:
    assert named_groups(r"a(b)\((?:c)[(](d)") == (r"(?P<g0>a(?P<g1>b)\((?:c)[(](?P<g2>d))", 2)


def test_sha2_with_bits_per_row() -> None:
    bits = call("multiply", T.INT64, col("i"), lit(0))  # 0 (NULL where i is NULL): not valid
    assert evaluate(call("sha2", S, col("s"), bits)).to_pylist() == [None] * 6
    value = evaluate(call("sha2", S, lit("abc"), lit(224))).to_pylist()[0]
    assert value == "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"


def test_timestampdiff_and_timestampadd_by_row() -> None:
    diff = call("timestampdiff", T.INT32, lit("hour"), col("ts"),
                lit(dt.datetime(2024, 1, 31, 12), pa.timestamp("us")))
    assert evaluate(diff).to_pylist() == [1, 253188, None, 209676, 755, 27000]
    weeks = call("timestampdiff", T.INT32, lit("week"), col("dt"), lit(dt.date(2024, 1, 1)))
    assert evaluate(weeks).to_pylist() == [-4, 1502, None, 1243, 0, 156]


def test_date_format_with_a_pattern_per_row() -> None:
    # k: 7, -7, 3, 2, NULL, 0 -> 'yyyy-MM', 'yyy', 'yyy', 'yy', NULL, ''
    pattern = call("left", S, lit("yyyy-MM-dd"), col("k"))
    text = evaluate(call("date_format", S, col("ts"), pattern)).to_pylist()
    assert text == ["2024-01", "1995", None, "00", None, ""]
    with pytest.raises(ExecutionError, match="unsupported letter 'l'"):
        evaluate(call("date_format", S, col("ts"), col("t")))
    formatted = evaluate(call("date_format", S, col("ts"), lit("EEEE, MMMM d, ''yy"))).to_pylist()
    assert formatted == ["Wednesday, January 31, '24", "Wednesday, March 15, '95", None,
                         "Tuesday, February 29, '00", "Sunday, December 31, '23",
                         "Friday, January 1, '21"]


def test_parsing_patterns_translate_or_fail_naming_the_field() -> None:
    assert strptime_format("dd.MM.yyyy HH:mm:ss 'at' a") == "%d.%m.%Y %H:%M:%S at %p"
    with pytest.raises(ExecutionError, match="'SSS'"):
        strptime_format("HH:mm:ss.SSS")


def test_try_cast_nulls_only_the_values_that_fail() -> None:
    values = Literal(None, S)
    assert evaluate_constant(Call("try_cast", (values,), T.INT64)) is None
    mixed = Call("concat", (col("s"), lit("1")), S)
    # "hello1", "Héllo wörld1", "1", "1", "  pad  1", "a%b_c\\d1": only "1" (twice) parses
    assert evaluate(Call("try_cast", (mixed,), T.INT32)).to_pylist() == \
        [None, None, 1, 1, None, None]
