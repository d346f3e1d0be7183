"""Shared fixtures: TPC-H SF 0.01 generated once into ./data (safe under pytest-xdist)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TPCH_TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders",
               "lineitem")


def ensure_tpch(sf: float) -> Path:
    """Generate TPC-H Parquet at scale ``sf`` into data/sf<sf> unless already there."""
    target = ROOT / "data" / f"sf{sf:g}"
    if (target / "lineitem.parquet").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".sf{sf:g}-", dir=target.parent))
    exe = Path(sys.executable).with_name("tpchgen-cli")
    subprocess.run([str(exe), "parquet", "-s", f"{sf:g}", "--output-dir", str(tmp)],
                   check=True, capture_output=True)
    try:
        os.rename(tmp, target)
    except OSError:  # another worker won the race
        shutil.rmtree(tmp, ignore_errors=True)
    return target


@pytest.fixture(scope="session")
def tpch_dir() -> Path:
    return ensure_tpch(0.01)


@pytest.fixture(scope="session")
def tpch_session(tpch_dir: Path):  # type: ignore[no-untyped-def]
    """A session with the eight TPC-H tables registered (read-only: do not mutate)."""
    import flowsql

    session = flowsql.connect()
    for name in TPCH_TABLES:
        session.sql(f"CREATE TABLE {name} WITH ('connector'='filesystem', "
                    f"'path'='{tpch_dir / (name + '.parquet')}', 'format'='parquet')")
    return session


@pytest.fixture(scope="session")
def duckdb_tpch(tpch_dir: Path):  # type: ignore[no-untyped-def]
    """A DuckDB connection with views over the same TPC-H files (the oracle)."""
    import duckdb

    con = duckdb.connect()
    for name in TPCH_TABLES:
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{tpch_dir / (name + '.parquet')}')")
    return con
