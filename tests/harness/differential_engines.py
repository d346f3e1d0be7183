"""The two engines under comparison, opened over the same files under the same names: the
eight TPC-H tables plus the NULL-heavy tables of :mod:`tests.harness.null_tables`.

A table flowsql fails to register is remembered rather than raised, so that only the
queries reading it fail (with the registration error), not the whole suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.harness.null_tables import write_tables
from tests.harness.spark import SPARK_TEST_SETTINGS
from tests.harness.tpch import TPCH_TABLES, create_table_sql


@dataclass
class Engines:
    """A flowsql session and a DuckDB connection; ``broken`` maps a table name to the error
    flowsql raised while registering it."""

    flowsql: Any
    duckdb: Any
    broken: dict[str, str]


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
         create_table_sql(name, tpch_dir),
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
