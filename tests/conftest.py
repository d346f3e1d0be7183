"""Shared fixtures: TPC-H SF 0.01 generated once into ./data (safe under pytest-xdist)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.tpch import TPCH_TABLES, create_table_sql, ensure_tpch


@pytest.fixture(scope="session")
def tpch_dir() -> Path:
    return ensure_tpch(0.01)


@pytest.fixture(scope="session")
def tpch_session(tpch_dir: Path):  # type: ignore[no-untyped-def]
    """A session with the eight TPC-H tables registered (read-only: do not mutate)."""
    import flowsql

    session = flowsql.connect()
    for name in TPCH_TABLES:
        session.sql(create_table_sql(name, tpch_dir))
    return session


@pytest.fixture(scope="session")
def duckdb_tpch(tpch_dir: Path):  # type: ignore[no-untyped-def]
    """A DuckDB connection with views over the same TPC-H files (the oracle)."""
    import duckdb

    con = duckdb.connect()
    for name in TPCH_TABLES:
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{tpch_dir / (name + '.parquet')}')")
    return con


@pytest.fixture(scope="session")
def kafka_broker():  # type: ignore[no-untyped-def]
    """A real Kafka-protocol broker (tansu) for this test process, on a free port."""
    from tests.harness.kafka_broker import DevBroker

    with DevBroker() as broker:
        yield broker
