"""The two engines under comparison, opened over the same files under the same names: the
eight TPC-H tables plus the NULL-heavy tables of :mod:`null_tables`.

A table flowsql fails to register is remembered rather than raised, so that only the
queries reading it fail (with the registration error), not the whole suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from null_tables import write_tables

TPCH_TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders",
               "lineitem")


@dataclass
class Engines:
    """A flowsql session and a DuckDB connection; ``broken`` maps a table name to the error
    flowsql raised while registering it."""

    flowsql: Any
    duckdb: Any
    broken: dict[str, str]


SPARK_TEST_SETTINGS = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4",
                       "spark.default.parallelism": "2"}


def open_engines(tpch_dir: Path, data_dir: Path, engine: str = "local") -> Engines:
    """Write the NULL-heavy tables into ``data_dir`` and register everything in both engines;
    flowsql runs queries on ``engine`` (local or spark)."""
    import duckdb

    from flowsql.session import connect

    extra = SPARK_TEST_SETTINGS if engine == "spark" else {}
    session = connect(engine=engine, **extra)
    con = duckdb.connect()
    broken: dict[str, str] = {}
    statements: list[tuple[str, str, str]] = [
        (name,
         f"CREATE TABLE {name} WITH ('connector'='filesystem', "
         f"'path'='{tpch_dir / (name + '.parquet')}', 'format'='parquet')",
         f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{tpch_dir / (name + '.parquet')}')")
        for name in TPCH_TABLES]
    for table in write_tables(data_dir):
        statements.append((table.name, table.flowsql_ddl(), table.duckdb_ddl()))
    for name, flowsql_ddl, duckdb_ddl in statements:
        con.execute(duckdb_ddl)
        try:
            session.sql(flowsql_ddl)
        except Exception as error:  # reported by the tests that read this table
            broken[name] = f"{type(error).__name__}: {error}"
    return Engines(session, con, broken)
