"""Flink's built-in functions on hand-checked values (NULLs and edge cases included), in
batch mode and in streaming mode over the same file: the same SQL gives the same rows."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import FlowSQLError

NAN = float("nan")
ROWS = pa.table({
    "id": pa.array([1, 2, 3], pa.int64()),
    "s": pa.array(["hello wORLD", None, ""]),
    "n": pa.array([7, None, -3], pa.int64()),
    "x": pa.array([2.75, None, -2.75]),
    "ts": pa.array([dt.datetime(2024, 1, 31, 10, 11, 12, 345000), None,
                    dt.datetime(2000, 2, 29, 23, 59, 59)], pa.timestamp("ms")),
    "doc": pa.array(['{"a": {"b": [1, "two", true]}, "c": null}', None, "not json"]),
})

# (expression over the table, expected values for ids 1, 2, 3)
CASES: list[tuple[str, list[object]]] = [
    # casts truncate toward zero
    ("CAST(x AS BIGINT)", [2, None, -2]),
    ("CAST(x * 10 AS SMALLINT)", [27, None, -27]),
    ("TRY_CAST(s AS INT)", [None, None, None]),
    ("TRY_CAST(CONCAT(CAST(n AS VARCHAR), 'x') AS INT)", [None, None, None]),
    ("TRY_CAST(CAST(n AS VARCHAR) AS INT)", [7, None, -3]),
    # a TIMESTAMP(3) prints exactly three fraction digits, trailing zeros included
    ("CAST(ts AS STRING)", ["2024-01-31 10:11:12.345", None, "2000-02-29 23:59:59.000"]),
    # temporal
    ("TIMESTAMPADD(MINUTE, 50, ts)", [dt.datetime(2024, 1, 31, 11, 1, 12, 345000), None,
                                      dt.datetime(2000, 3, 1, 0, 49, 59)]),
    ("TIMESTAMPADD(MONTH, 1, ts)", [dt.datetime(2024, 2, 29, 10, 11, 12, 345000), None,
                                    dt.datetime(2000, 3, 29, 23, 59, 59)]),
    ("TIMESTAMPADD(DAY, n, ts)", [dt.datetime(2024, 2, 7, 10, 11, 12, 345000), None,
                                  dt.datetime(2000, 2, 26, 23, 59, 59)]),
    ("TIMESTAMPDIFF(DAY, ts, TIMESTAMP '2024-02-01 10:11:12')", [0, None, 8737]),
    ("TIMESTAMPDIFF(MONTH, ts, TIMESTAMP '2024-02-29 10:11:12')", [0, None, 287]),
    ("TIMESTAMPDIFF(MONTH, TIMESTAMP '2024-01-31 10:11:12', TIMESTAMP '2024-02-29 10:11:12')",
     [1, 1, 1]),
    ("TIMESTAMPDIFF(MONTH, TIMESTAMP '2024-01-31 10:11:13', TIMESTAMP '2024-02-29 10:11:12')",
     [0, 0, 0]),
    ("TIMESTAMPDIFF(YEAR, TIMESTAMP '2024-03-01 00:00:00', ts)", [0, None, -24]),
    ("TIMESTAMPDIFF(SECOND, ts, TIMESTAMP '2024-01-31 10:11:10')", [-2, None, 754827071]),
    ("FLOOR(ts TO HOUR)", [dt.datetime(2024, 1, 31, 10), None, dt.datetime(2000, 2, 29, 23)]),
    ("CEIL(ts TO MINUTE)", [dt.datetime(2024, 1, 31, 10, 12), None, dt.datetime(2000, 3, 1)]),
    ("CEIL(FLOOR(ts TO MONTH) TO MONTH)", [dt.datetime(2024, 1, 1), None,
                                           dt.datetime(2000, 2, 1)]),
    ("CEIL(ts TO YEAR)", [dt.datetime(2025, 1, 1), None, dt.datetime(2001, 1, 1)]),
    ("CEIL(FLOOR(ts TO DAY) TO DAY)", [dt.datetime(2024, 1, 31), None,
                                       dt.datetime(2000, 2, 29)]),
    ("DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss')", ["2024-01-31 10:11:12", None,
                                                "2000-02-29 23:59:59"]),
    ("DATE_FORMAT(ts, 'd/M/yy h:mm a, SSS ''ms'' EEE MMMM')",
     ["31/1/24 10:11 AM, 345 ms Wed January", None, "29/2/00 11:59 PM, 000 ms Tue February"]),
    ("TO_TIMESTAMP(DATE_FORMAT(ts, 'dd.MM.yyyy HH:mm'), 'dd.MM.yyyy HH:mm')",
     [dt.datetime(2024, 1, 31, 10, 11), None, dt.datetime(2000, 2, 29, 23, 59)]),
    ("TO_TIMESTAMP(s)", [None, None, None]),
    ("TO_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd'))", [dt.datetime(2024, 1, 31), None,
                                                     dt.datetime(2000, 2, 29)]),
    ("TO_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss.SSS'))",
     [dt.datetime(2024, 1, 31, 10, 11, 12, 345000), None, dt.datetime(2000, 2, 29, 23, 59, 59)]),
    ("TO_TIMESTAMP('2024-13-01 00:00:00')", [None, None, None]),
    ("TO_DATE(DATE_FORMAT(ts, 'yyyy-MM-dd'))", [dt.date(2024, 1, 31), None,
                                                dt.date(2000, 2, 29)]),
    ("UNIX_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss'))", [1706695872, None, 951868799]),
    ("FROM_UNIXTIME(n * 3600)", ["1970-01-01 07:00:00", None, "1969-12-31 21:00:00"]),
    ("YEAR(ts) * 100 + MONTH(ts)", [202401, None, 200002]),
    ("DAYOFWEEK(ts)", [4, None, 3]),
    ("DAYOFMONTH(ts) + HOUR(ts)", [41, None, 52]),
    # strings
    ("CONCAT_WS('-', s, 'x', CAST(n AS VARCHAR))", ["hello wORLD-x-7", "x", "-x--3"]),
    ("CONCAT_WS(s, 'a', 'b')", ["ahello wORLDb", None, "ab"]),
    ("INITCAP(s)", ["Hello World", None, ""]),
    ("LOCATE('l', s)", [3, None, 0]),
    ("LOCATE('l', s, 4)", [4, None, 0]),
    ("LOCATE('l', s, 5)", [0, None, 0]),
    ("LOCATE('e', s, 0)", [2, None, 0]),
    ("POSITION('o' IN s)", [5, None, 0]),
    ("SPLIT_INDEX(s, 'l', 2)", ["o wORLD", None, None]),
    ("SPLIT_INDEX(s, 'l', 3)", [None, None, None]),
    ("SPLIT_INDEX(s, '', 0)", ["hello wORLD", None, ""]),
    ("SPLIT_INDEX(s, ' ', 0)", ["hello", None, ""]),
    ("REGEXP_EXTRACT(s, '(l+)o (w)', 1)", ["ll", None, None]),
    ("REGEXP_EXTRACT(s, 'o.')", ["o ", None, None]),
    ("REGEXP_REPLACE(s, '(l+)', '<$1>')", ["he<ll>o wORLD", None, ""]),
    ("REGEXP(s, 'w[A-Z]+')", [True, None, False]),
    ("TRIM(BOTH 'hD' FROM s)", ["ello wORL", None, ""]),
    ("TRIM(LEADING 'eh' FROM s)", ["llo wORLD", None, ""]),
    ("ASCII(s)", [104, None, 0]),
    ("ASCII(CONCAT('é', s))", [-61, -61, -61]),
    ("CHR(n - 10)", ["", None, ""]),
    ("CHR(n + 314)", ["A", None, "7"]),
    ("CHR(n + 90)", ["a", None, "W"]),
    ("OVERLAY(s PLACING '__' FROM 2 FOR 3)", ["h__o wORLD", None, "__"]),
    ("OVERLAY(s PLACING 'XY' FROM 3)", ["heXYo wORLD", None, "XY"]),
    ("TO_BASE64(s)", ["aGVsbG8gd09STEQ=", None, ""]),
    ("FROM_BASE64(TO_BASE64(s))", ["hello wORLD", None, ""]),
    ("MD5(s)", ["bcb76a390f4cbaab2d78b4307000dd13", None, "d41d8cd98f00b204e9800998ecf8427e"]),
    ("SHA2(s, 256) = SHA256(s)", [True, None, True]),
    ("SHA1('abc')", ["a9993e364706816aba3e25717850c26c9cd0d89d"] * 3),
    ("IS_DIGIT(CAST(n AS VARCHAR))", [True, False, False]),
    ("IS_ALPHA(s)", [False, False, False]),
    ("IS_DECIMAL(CAST(x AS VARCHAR))", [True, False, True]),
    # numbers
    ("LOG(2, n + 1)", [3.0, None, NAN]),
    ("TRUNCATE(x, 1)", [2.7, None, -2.7]),
    ("TRUNCATE(n, -1)", [0, None, 0]),
    ("MOD(n, 4)", [3, None, -3]),
    # JSON
    ("JSON_VALUE(doc, '$.a.b[1]')", ["two", None, None]),
    ("JSON_VALUE(doc, '$.a.b[2]')", ["true", None, None]),
    ("JSON_VALUE(doc, '$.a')", [None, None, None]),
    ("JSON_QUERY(doc, '$.a.b')", ['[1,"two",true]', None, None]),
    ("JSON_EXISTS(doc, '$.c')", [False, None, False]),
    ("JSON_EXISTS(doc, '$.a.b')", [True, None, False]),
    ("JSON_VALUE('{\"a\": 1.50}', '$.a')", ["1.50"] * 3),
    ("JSON_EXISTS(doc, '$.a.b[3]')", [False, None, False]),
    ("ROUND(DEGREES(ATAN2(n, n)) + RADIANS(180) - PI(), 9)", [45.0, None, -135.0]),
    ("ROUND(SIN(x) * SIN(x) + COS(x) * COS(x), 9)", [1.0, None, 1.0]),
    ("ROUND(COT(x) * TAN(x), 9) + ROUND(COSH(0) + SINH(0) + TANH(0), 9)", [2.0, None, 2.0]),
    ("ASIN(x)", [NAN, None, NAN]),
    ("ROUND(ACOS(x / 3) + ASIN(x / 3) - PI() / 2 + ATAN(1) * 4 - PI(), 9) + LN(E())",
     [1.0, None, 1.0]),
    # types
    ("TYPEOF(n)", ["BIGINT"] * 3),
]


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("flink_functions") / "t.parquet"
    pq.write_table(ROWS, file)
    return file


def _session(path: Path, mode: str) -> flowsql.Session:
    session = flowsql.connect(**{"execution.runtime-mode": mode})
    session.sql(f"""CREATE TABLE t (id BIGINT, s STRING, n BIGINT, x DOUBLE, ts TIMESTAMP(3),
                      doc STRING) WITH ('connector' = 'filesystem', 'path' = '{path}')""")
    return session


@pytest.fixture(scope="module")
def batch(path: Path) -> flowsql.Session:
    return _session(path, "batch")


@pytest.fixture(scope="module")
def streaming(path: Path) -> flowsql.Session:
    return _session(path, "streaming")


def _values(session: flowsql.Session, expression: str) -> list[object]:
    rows = session.sql(f"SELECT id, {expression} AS v FROM t").to_arrow().to_pylist()
    return [r["v"] for r in sorted(rows, key=lambda r: r["id"])]


def _same(actual: list[object], expected: list[object]) -> bool:
    def norm(v: object) -> object:
        if isinstance(v, float) and v != v:
            return "NaN"
        if isinstance(v, Decimal):
            return float(v)
        if isinstance(v, dt.datetime):
            return v.replace(tzinfo=None)
        return v
    return [norm(a) for a in actual] == [norm(e) for e in expected]


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[c[0] for c in CASES])
def test_batch(batch: flowsql.Session, expression: str, expected: list[object]) -> None:
    actual = _values(batch, expression)
    assert _same(actual, expected), actual


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[c[0] for c in CASES])
def test_streaming(streaming: flowsql.Session, expression: str,
                   expected: list[object]) -> None:
    actual = _values(streaming, expression)
    assert _same(actual, expected), actual


@pytest.mark.parametrize("query", [
    "SELECT CAST(1e20 AS BIGINT)",
    "SELECT CAST(x * 1e19 AS BIGINT) FROM t",
    "SELECT CAST(CAST(n AS DOUBLE) * 100 AS TINYINT) FROM t",
])
def test_out_of_range_casts_are_errors_naming_the_value(batch: flowsql.Session,
                                                        query: str) -> None:
    with pytest.raises(FlowSQLError, match=r"cannot cast -?[0-9.e+]+"):
        batch.sql(query).to_arrow()


def test_clock_functions_read_utc_once_per_query(batch: flowsql.Session) -> None:
    before = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    row = batch.sql("SELECT CURRENT_TIMESTAMP AS ts, LOCALTIMESTAMP AS lt, NOW() AS n, "
                    "CURRENT_DATE AS d FROM t").to_arrow().to_pylist()
    after = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    assert len({(r["ts"], r["lt"], r["n"], r["d"]) for r in row}) == 1
    first = row[0]
    assert first["ts"].tzinfo is not None and first["lt"].tzinfo is None
    assert first["ts"].replace(tzinfo=None) == first["lt"] == first["n"].replace(tzinfo=None)
    assert before - dt.timedelta(milliseconds=1) <= first["lt"] <= after
    assert first["d"] in (before.date(), after.date())


def test_literal_fraction_cast_folds_by_truncation(batch: flowsql.Session) -> None:
    row = batch.sql("SELECT CAST(103.75 AS BIGINT) AS a, CAST(-103.75 AS INT) AS b, "
                    "CAST('7.9' AS SMALLINT) AS c, TRY_CAST('x' AS INT) AS d").to_arrow()
    assert row.to_pylist() == [{"a": 103, "b": -103, "c": 7, "d": None}]


def test_join_on_a_double_cast_matches_flinks_rows(batch: flowsql.Session) -> None:
    rows = batch.sql("SELECT a.id, b.id AS bid FROM t a JOIN t b "
                     "ON CAST(a.x AS BIGINT) + 5 = b.n + 0").to_arrow().to_pylist()
    # 2.75 -> 2 (not 3): 2 + 5 = 7 matches id 1's n; -2.75 -> -2: 3 matches nothing.
    assert rows == [{"id": 1, "bid": 1}]
