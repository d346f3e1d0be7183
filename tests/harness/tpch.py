"""TPC-H test data: the table names and Parquet files generated once per scale factor.

Generation goes to a temporary directory renamed into place, so concurrent pytest-xdist
workers never read a half-written data set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


def create_table_sql(name: str, data_dir: Path) -> str:
    """flowsql DDL registering TPC-H table ``name`` from its Parquet file in ``data_dir``."""
    return (f"CREATE TABLE {name} WITH ('connector'='filesystem', "
            f"'path'='{data_dir / (name + '.parquet')}', 'format'='parquet')")
