"""Flink's built-in functions compiled to PySpark give the local engine's results (which
tests/sql/test_flink_functions.py checks by hand); the ones Spark has no equivalent for are
refused at compile time, naming the function. One query for all, since Spark is slow."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import FlowSQLError
from tests.harness.spark import SPARK_TEST_SETTINGS as SETTINGS

ROWS = pa.table({
    "id": pa.array([1, 2, 3, 4], pa.int64()),
    "s": pa.array(["hello wORLD", None, "", "a,b,,c"]),
    "n": pa.array([7, None, -3, 300], pa.int64()),
    "x": pa.array([2.75, None, -2.75, 1e3]),
    "ts": pa.array([dt.datetime(2024, 1, 31, 10, 11, 12, 345000), None,
                    dt.datetime(2000, 2, 29, 23, 59, 59), dt.datetime(2024, 3, 1)],
                   pa.timestamp("ms")),
})

EXPRESSIONS = [
    "CAST(x AS BIGINT)", "CAST(x * 10 AS SMALLINT)", "TRY_CAST(s AS INT)",
    "TRY_CAST(CONCAT(CAST(n AS VARCHAR), '.9') AS INT)",
    "TIMESTAMPDIFF(MONTH, ts, TIMESTAMP '2024-02-29 10:11:12')",
    "TIMESTAMPDIFF(SECOND, ts, TIMESTAMP '2024-01-31 10:11:10')",
    "TIMESTAMPDIFF(DAY, TIMESTAMP '2000-01-01 00:00:00', ts)",
    "TIMESTAMPDIFF(MONTH, TIMESTAMP '2024-01-31 11:00:00', ts)",
    "TIMESTAMPDIFF(YEAR, ts, DATE '2021-02-28')",
    "TIMESTAMPADD(MINUTE, n, ts)", "TIMESTAMPADD(MONTH, 1, ts)",
    "TIMESTAMPADD(DAY, n, CAST(ts AS DATE))", "TIMESTAMPADD(HOUR, -2, CAST(ts AS DATE))",
    "CEIL(ts TO HOUR)", "FLOOR(ts TO MINUTE)", "CEIL(ts TO MONTH)",
    "DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss.SSS')", "DATE_FORMAT(ts, 'd/M/yy h:mm a EEE MMM')",
    "FROM_UNIXTIME(n * 3600)", "TO_TIMESTAMP(DATE_FORMAT(ts, 'dd.MM.yyyy HH:mm'), 'dd.MM.yyyy HH:mm')",
    "TO_TIMESTAMP(s)", "TO_DATE(DATE_FORMAT(ts, 'yyyy-MM-dd'))",
    "TO_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd'))",
    "TO_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss.SSS'))",
    "UNIX_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss'))", "TO_TIMESTAMP_LTZ(n, 0)",
    "CONCAT_WS('-', s, 'x', CAST(n AS VARCHAR))", "LOCATE('l', s)", "LOCATE('l', s, 4)",
    "SPLIT_INDEX(s, ',', 2)", "SPLIT_INDEX(s, ',', 9)", "REGEXP_EXTRACT(s, '(l+)o', 1)",
    "REGEXP_REPLACE(s, '(l+)', '<$1>')", "TRIM(BOTH 'hD' FROM s)", "TRIM(TRAILING 'c,' FROM s)",
    "CHR(n + 90)", "OVERLAY(s PLACING '__' FROM 2 FOR 3)", "OVERLAY(s PLACING 'XY' FROM 3)",
    "IS_DIGIT(CAST(n AS VARCHAR))", "IS_ALPHA(s)", "IS_DECIMAL(CAST(x AS VARCHAR))",
    "MD5(s)", "SHA1(s)", "SHA2(s, 384)", "SHA256(s)", "TO_BASE64(s)", "FROM_BASE64(TO_BASE64(s))",
    "ASCII(s)", "ASCII(CONCAT('é', s))", "LOG(2, n + 1)", "LOG(2, n - 7)",
    "ROUND(DEGREES(ATAN2(n, x)) + RADIANS(COT(x)) + ASIN(x / 1000), 9)",
    "ROUND(SIN(x) + COS(x) + TAN(x) + SINH(x / 100) + COSH(x / 100) + TANH(x), 9)", "YEAR(ts) * 100 + MONTH(ts)", "DAYOFWEEK(ts)",
]


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("flink_functions_spark") / "t.parquet"
    pq.write_table(ROWS, file)
    return file


def _session(path: Path, engine: str) -> flowsql.Session:
    session = flowsql.connect(engine=engine, **(SETTINGS if engine == "spark" else {}))
    session.sql(f"""CREATE TABLE t (id BIGINT, s STRING, n BIGINT, x DOUBLE, ts TIMESTAMP(3))
                    WITH ('connector' = 'filesystem', 'path' = '{path}')""")
    return session


def _comparable(value: object) -> object:
    """NaN equals NaN here: both engines must say NaN."""
    return "NaN" if isinstance(value, float) and value != value else value


def _rows(session: flowsql.Session, sql: str) -> list[dict[str, object]]:
    rows = session.sql(sql).to_arrow().to_pylist()
    for row in rows:
        for key, value in row.items():
            if isinstance(value, dt.datetime):
                row[key] = value.replace(tzinfo=None)
    return sorted(rows, key=lambda r: r["id"])  # type: ignore[arg-type, return-value]


def test_compiled_functions_match_the_local_engine(spark, path: Path) -> None:  # type: ignore[no-untyped-def]
    columns = ", ".join(f"{e} AS c{i}" for i, e in enumerate(EXPRESSIONS))
    sql = f"SELECT id, {columns} FROM t"
    local = _rows(_session(path, "local"), sql)
    remote = _rows(_session(path, "spark"), sql)
    for i, expression in enumerate(EXPRESSIONS):
        mine = [_comparable(r[f"c{i}"]) for r in local]
        theirs = [_comparable(r[f"c{i}"]) for r in remote]
        assert mine == theirs, f"{expression}: local {mine} != Spark {theirs}"


@pytest.mark.parametrize("expression", ["INITCAP(s)", "TRUNCATE(x, 1)",
                                        "JSON_VALUE(s, '$.a')"])
def test_functions_without_a_spark_equivalent_are_refused(spark, path: Path,  # type: ignore[no-untyped-def]
                                                          expression: str) -> None:
    session = _session(path, "spark")
    with pytest.raises(FlowSQLError, match="Spark engine does not support function"):
        session.sql(f"SELECT {expression} FROM t").to_arrow()
