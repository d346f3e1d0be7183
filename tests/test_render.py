"""Rendering: exact text for small tables covering NULLs, decimals, dates, floats, truncation."""

from __future__ import annotations

import datetime
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from flowsql.render import (
    MAX_CELL_WIDTH,
    render_csv,
    render_json,
    render_result,
    render_table,
    row_count_footer,
)
from flowsql.session import Result


@pytest.fixture
def mixed() -> pa.Table:
    return pa.table({
        "id": pa.array([1, 22, None], pa.int64()),
        "name": pa.array(["alice", None, "bo"], pa.string_view()),
        "price": pa.array([Decimal("1.50"), None, Decimal("-12345.05")], pa.decimal128(15, 2)),
        "day": pa.array([datetime.date(2024, 1, 31), None, datetime.date(1999, 12, 1)]),
        "ratio": pa.array([3.0, 0.25, None], pa.float64()),
        "ok": pa.array([True, None, False]),
    })


def test_table_aligns_numbers_right_and_text_left(mixed: pa.Table) -> None:
    assert render_table(mixed) == "\n".join([
        "  id | name  |     price | day        | ratio | ok",
        "-----+-------+-----------+------------+-------+------",
        "   1 | alice |      1.50 | 2024-01-31 |   3.0 | true",
        "  22 | NULL  |      NULL | NULL       |  0.25 | NULL",
        "NULL | bo    | -12345.05 | 1999-12-01 |  NULL | false",
        "3 rows",
    ])


def test_table_truncated_rows_say_how_many_are_shown(mixed: pa.Table) -> None:
    assert render_table(mixed.select(["id", "name"]), max_rows=2) == "\n".join([
        "id | name",
        "---+------",
        " 1 | alice",
        "22 | NULL",
        "3 rows (showing first 2)",
    ])


def test_table_without_limit_shows_everything() -> None:
    table = pa.table({"n": list(range(100))})
    text = render_table(table, max_rows=None)
    assert text.splitlines()[-1] == "100 rows"
    assert text.splitlines()[-2] == "99"


def test_long_values_end_with_an_ellipsis_and_lines_have_no_trailing_spaces() -> None:
    long = "x" * (MAX_CELL_WIDTH + 10)
    table = pa.table({"s": [long, "a"], "t": ["b", "line\nbreak\tand tab"]})
    lines = render_table(table).splitlines()
    assert lines[2] == "x" * (MAX_CELL_WIDTH - 1) + "… | b"
    assert lines[3] == "a" + " " * (MAX_CELL_WIDTH - 1) + " | line\\nbreak\\tand tab"
    assert all(line == line.rstrip() for line in lines)


def test_empty_table_keeps_its_header_and_one_row_is_singular() -> None:
    table = pa.table({"a": pa.array([], pa.int32()), "bb": pa.array([], pa.string())})
    assert render_table(table) == "a | bb\n--+---\n0 rows"
    assert render_table(pa.table({"a": [7]})) == "a\n-\n7\n1 row"


def test_footer_variants() -> None:
    assert row_count_footer(1) == "1 row"
    assert row_count_footer(100, 40, 0.123) == "100 rows in 0.12 s (showing first 40)"
    assert row_count_footer(3, 3, 2.0) == "3 rows in 2.00 s"


def test_table_over_chunks_with_different_boundaries() -> None:
    table = pa.table({"a": pa.chunked_array([[1, 2], [3]]),
                      "b": pa.chunked_array([["x"], ["y", "z"]])})
    assert render_table(table) == "a | b\n--+--\n1 | x\n2 | y\n3 | z\n3 rows"


def test_nested_and_binary_values_are_shown() -> None:
    table = pa.table({"l": pa.array([[1, 2], None]), "b": pa.array([b"\x01\xff", b""])})
    assert render_table(table) == "\n".join([
        "l     | b",
        "------+-------",
        "[1,2] | \\x01ff",
        "NULL  | \\x",
        "2 rows",
    ])


def test_result_rendering_by_kind(mixed: pa.Table) -> None:
    plan = pa.table({"plan": ["== Physical Plan ==", "  Scan t  [rows=3]", ""]})
    assert render_result(Result("explain", table=plan)) == "== Physical Plan ==\n  Scan t  [rows=3]\n"
    assert render_result(Result("ddl", message="Table 't' created")) == "Table 't' created"
    assert render_result(Result("set", message=None)) == ""
    assert render_result(Result("query", table=mixed), max_rows=1).endswith(
        "3 rows (showing first 1)")


def test_csv_quotes_only_when_needed_and_keeps_null_apart_from_empty(mixed: pa.Table) -> None:
    assert render_csv(mixed) == "\n".join([
        "id,name,price,day,ratio,ok",
        "1,alice,1.50,2024-01-31,3.0,true",
        "22,,,,0.25,",
        ",bo,-12345.05,1999-12-01,,false",
    ])
    tricky = pa.table({"a,b": ['say "hi"', "", "x\ny", None]})
    assert render_csv(tricky) == '"a,b"\n"say ""hi"""\n""\n"x\ny"\n'


def test_csv_of_empty_table_is_its_header() -> None:
    assert render_csv(pa.table({"a": pa.array([], pa.int64())})) == "a"


def test_json_lines(mixed: pa.Table) -> None:
    assert render_json(mixed) == "\n".join([
        '{"id":1,"name":"alice","price":1.50,"day":"2024-01-31","ratio":3.0,"ok":true}',
        '{"id":22,"name":null,"price":null,"day":null,"ratio":0.25,"ok":null}',
        '{"id":null,"name":"bo","price":-12345.05,"day":"1999-12-01","ratio":null,"ok":false}',
    ])


def test_json_escapes_strings_and_maps_non_finite_floats_to_null() -> None:
    table = pa.table({"s": ['q"\\\n\x01é'], "f": [float("nan")], "g": [float("-inf")],
                      "ts": pa.array([datetime.datetime(2024, 1, 2, 3, 4, 5)], pa.timestamp("s"))})
    text = render_json(table)
    assert text == '{"s":"q\\"\\\\\\n\\u0001é","f":null,"g":null,"ts":"2024-01-02 03:04:05"}'
    assert json.loads(text) == {"s": 'q"\\\n\x01é', "f": None, "g": None,
                                "ts": "2024-01-02 03:04:05"}


def test_json_decimals_are_numbers_when_a_double_keeps_them_else_exact_strings() -> None:
    table = pa.table({"d": pa.array([Decimal("123456789012.345"), Decimal("1234567890123.456"),
                                     Decimal("-0.001")], pa.decimal128(38, 3))})
    assert render_json(table) == "\n".join([
        '{"d":123456789012.345}',
        '{"d":"1234567890123.456"}',
        '{"d":-0.001}',
    ])
    loaded = [json.loads(line, parse_float=Decimal)["d"] for line in render_json(table).split("\n")]
    assert [Decimal(str(v)) for v in loaded] == [Decimal("123456789012.345"),
                                                 Decimal("1234567890123.456"), Decimal("-0.001")]


def test_json_of_empty_table_is_empty() -> None:
    assert render_json(pa.table({"a": pa.array([], pa.int64())})) == ""
