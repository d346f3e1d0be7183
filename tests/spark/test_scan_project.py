"""Scans, filters and projections: decimal arithmetic, dates, strings, CASE, casts."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flowsql.errors import DataError
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import Case, Cast
from flowsql.planner.physical import FilterExec

from .builders import call, col, lit, project, scan
from .compare import assert_rows, check, run

D = decimal.Decimal


def test_decimal_arithmetic_with_filter(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t = scan(tables["t"])
    price, qty, x = col(t, "price"), col(t, "qty"), col(t, "x")
    one = lit(D("1"), pa.decimal128(1, 0))
    disc = lit(D("0.05"), pa.decimal128(2, 2))
    filtered = FilterExec(t, call("gt", price, lit(D("1.00"), pa.decimal128(3, 2))), 50)
    plan = project(
        filtered,
        ("id", col(t, "id")),
        ("net", call("multiply", price, call("subtract", one, disc))),
        ("total", call("multiply", price, qty)),
        ("plus", call("add", price, lit(D("1.5"), pa.decimal128(2, 1)))),
        ("ratio", call("divide", price, qty)),
        ("m", call("modulo", qty, lit(2, T.INT32))),
        ("xq", call("add", x, qty)),
        ("neg", call("negate", price)),
        ("qq", call("multiply", qty, qty)),
    )
    check(plan, duck, "SELECT id, price * (1 - 0.05), price * qty, price + 1.5, price / qty, "
          "qty % 2, x + qty, -price, qty * qty FROM t WHERE price > 1.00")


def test_scalar_functions(tables, duck) -> None:  # type: ignore[no-untyped-def]
    t = scan(tables["t"])
    s, d, k, grp, x, price = (col(t, n) for n in ("s", "d", "k", "grp", "x", "price"))
    month = lit((1, 0, 0), T.INTERVAL)
    case = Case((call("lt", k, lit(3, T.INT64)), call("is_null", k)),
                (lit("low", T.STRING), lit("none", T.STRING)), lit("high", T.STRING), T.STRING)
    plan = project(
        t,
        ("id", col(t, "id")),
        ("up", call("upper", s)),
        ("sub", call("substring", s, lit(2, T.INT64), lit(3, T.INT64))),
        ("len", call("length", s, dtype=T.INT64)),
        ("like", call("like", s, lit("a%", T.STRING))),
        ("like_us", call("like", s, lit("a\\b", T.STRING))),
        ("cat", call("concat", s, grp)),
        ("pos", call("strpos", s, lit("an", T.STRING), dtype=T.INT64)),
        ("co", call("coalesce", k, lit(-1, T.INT64))),
        ("inl", call("in_list", k, lit(1, T.INT64), lit(3, T.INT64), lit(None, T.INT64))),
        ("case", case),
        ("next_month", call("add", d, month)),
        ("days", call("subtract", d, lit(dt.date(2024, 1, 1), T.DATE))),
        ("plus3", call("add", d, lit(3, T.INT32))),
        ("yr", call("extract_year", d, dtype=T.INT64)),
        ("dow", call("extract_dow", d, dtype=T.INT64)),
        ("trunc", call("date_trunc", lit("month", T.STRING), d, dtype=T.DATE)),
        ("rnd", call("round", x, lit(0, T.INT64))),
        ("flr", call("floor", price, dtype=pa.decimal128(14, 0))),
        ("as_int", Cast(x, T.INT32)),  # truncates (Flink); the DuckDB side says trunc()
        ("dist", call("is_distinct_from", k, lit(1, T.INT64))),
        ("gt", call("greatest", k, lit(2, T.INT64))),
        ("ifx", call("nullif", grp, lit("a", T.STRING))),
        ("sp", call("split_part", s, lit("a", T.STRING), lit(2, T.INT64))),
        ("sw", call("starts_with", s, lit("b", T.STRING))),
        ("lp", call("lpad", s, lit(7, T.INT64), lit("*", T.STRING))),
    )
    check(plan, duck, r"""
        SELECT id, upper(s), substring(s, 2, 3), length(s), s LIKE 'a%', s LIKE 'a\b',
               concat(s, grp), strpos(s, 'an'), coalesce(k, -1), k IN (1, 3, NULL),
               CASE WHEN k < 3 THEN 'low' WHEN k IS NULL THEN 'none' ELSE 'high' END,
               CAST(d + INTERVAL 1 MONTH AS DATE), d - DATE '2024-01-01', d + 3, year(d),
               dayofweek(d), CAST(date_trunc('month', d) AS DATE), round(x, 0), floor(price),
               CAST(trunc(x) AS INTEGER), k IS DISTINCT FROM 1, greatest(k, 2), nullif(grp, 'a'),
               split_part(s, 'a', 2), starts_with(s, 'b'), lpad(s, 7, '*')
        FROM t""")


def test_scan_filters_and_csv(tables, duck, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pyarrow.csv as pcsv

    from flowsql.planner.catalog import TableEntry

    table = pa.table({"a": pa.array([1, 2, 3], pa.int64()), "b": ["x", None, "z"]})
    path = tmp_path / "data.csv"
    pcsv.write_csv(table, path, pcsv.WriteOptions(delimiter="|", include_header=True))
    entry = TableEntry("c", table.schema, {"connector": "filesystem", "path": str(path),
                                           "format": "csv", "csv.field-delimiter": "|",
                                           "csv.ignore-first-line": "true"})
    plan = scan(entry, filters=(lambda n: call("gte", col(n, "a"), lit(2, T.INT64)),))
    check(plan, duck, "SELECT * FROM (VALUES (2, NULL), (3, 'z')) v(a, b)")


def test_parquet_file_missing_a_declared_column_is_an_error_naming_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "parts"
    folder.mkdir()
    pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), folder / "p0.parquet")
    pq.write_table(pa.table({"a": [3], "c": ["z"]}), folder / "p1.parquet")
    declared = pa.schema([("a", pa.int64()), ("b", pa.string())])
    table = TableEntry("t", declared, {"connector": "filesystem", "path": str(folder),
                                        "format": "parquet"})
    with pytest.raises(DataError) as error:
        run(scan(table))
    assert str(error.value) == \
        f"Parquet file '{folder / 'p1.parquet'}' has no column 'b' (declared by the table)"
    (folder / "p1.parquet").unlink()
    assert_rows(run(scan(table)), [(1, "x"), (2, "y")])
