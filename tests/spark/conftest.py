"""One SparkSession per test process (Spark takes seconds to start) and a small data set
written as Parquet, registered both as catalog tables and as DuckDB views (the oracle)."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flowsql.planner.catalog import TableEntry
from flowsql.spark.session import get_spark
from tests.harness.spark import SPARK_TEST_SETTINGS

D = decimal.Decimal


def _tables() -> dict[str, pa.Table]:
    day = dt.date(2024, 1, 1)
    t = pa.table({
        "id": pa.array(range(1, 13), pa.int64()),
        "grp": pa.array(["a", "b", None, "a", "b", "a", "c", None, "a", "b", "c", "a"]),
        "k": pa.array([1, 2, None, 3, 1, 5, None, 2, 7, 3, 1, 9], pa.int64()),
        "price": pa.array([D("10.50"), D("3.25"), None, D("7.00"), D("99.99"), D("0.01"),
                           D("12.34"), D("5.55"), D("-4.20"), D("8.80"), D("3.25"), D("1.00")],
                          pa.decimal128(15, 2)),
        "qty": pa.array([3, 1, 4, None, 5, 9, 2, 6, 5, 3, 5, 8], pa.int32()),
        "d": pa.array([day + dt.timedelta(days=17 * i) for i in range(12)], pa.date32()),
        "x": pa.array([1.5, None, -2.25, 3.0, 0.0, 2.5, None, 7.75, 1.5, -1.0, 4.0, 0.5]),
        "s": pa.array(["apple", "banana", "cherry", None, "a_b", "a\\b", "Apple", "date",
                       "elder", "fig", "grape", "kiwi"], pa.string_view()),
    })
    u = pa.table({
        "k": pa.array([1, 1, 2, None, 3, 4, 9], pa.int64()),
        "v": pa.array(["one", "uno", "two", "null", "three", "four", "nine"]),
        "w": pa.array([D("5.00"), D("20.00"), D("1.00"), D("9.99"), None, D("3.00"),
                       D("2.00")], pa.decimal128(10, 2)),
    })
    # Unique keys, no NULL key: the right side of scalar subqueries and NOT IN without NULL.
    v = pa.table({
        "k": pa.array([1, 2, 3, 9], pa.int64()),
        "label": pa.array(["x1", "x2", "x3", "x9"]),
    })
    empty = t.slice(0, 0)
    return {"t": t, "u": u, "v": v, "empty": empty}


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    return get_spark(SPARK_TEST_SETTINGS)


@pytest.fixture(scope="session")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TableEntry]:
    root = Path(tmp_path_factory.mktemp("spark_data"))
    entries = {}
    for name, table in _tables().items():
        path = root / f"{name}.parquet"
        pq.write_table(table, path)
        entries[name] = TableEntry(name, table.schema, {"connector": "filesystem",
                                                        "path": str(path),
                                                        "format": "parquet"})
    return entries


@pytest.fixture(scope="session")
def duck(tables: dict[str, TableEntry]) -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    for name, entry in tables.items():
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{entry.path}')")
    yield con
    con.close()
