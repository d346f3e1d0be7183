"""TPC-H data generation: one Parquet file per table, written by the ``tpchgen-cli`` executable.

The data directory layout is the contract the runner and the tests rely on:
``<dir>/<table>.parquet`` for each of :data:`TABLES`. Files appear atomically (generated into a
temporary sibling directory, then renamed), so an interrupted run never leaves a truncated
table that a later run would mistake for a complete one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from flowsql.errors import FlowSQLError

TABLES: tuple[str, ...] = ("region", "nation", "supplier", "customer", "part", "partsupp",
                           "orders", "lineitem")


def table_path(data_dir: Path, table: str) -> Path:
    """Where ``table`` lives inside a data directory written by :func:`generate`."""
    return Path(data_dir) / f"{table}.parquet"


def missing_tables(data_dir: Path) -> list[str]:
    """The tables whose Parquet file is absent from ``data_dir`` (empty when complete)."""
    return [table for table in TABLES if not table_path(data_dir, table).is_file()]


def _generator_executable() -> str:
    # Prefer the generator installed next to this interpreter: it is the version pinned in
    # pyproject, and the venv's bin directory is often not on PATH.
    sibling = Path(sys.executable).with_name("tpchgen-cli")
    if sibling.is_file():
        return str(sibling)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise FlowSQLError("tpchgen-cli not found: install it with `pip install tpchgen-cli` "
                           "(it is a dependency of flowsql)")
    return found


def generate(sf: float, out: Path) -> None:
    """Write TPC-H at scale factor ``sf`` as ``out/<table>.parquet``, replacing existing files."""
    if sf <= 0:
        raise FlowSQLError(f"scale factor must be positive, got {sf:g}")
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    command = [_generator_executable(), "parquet", "-s", f"{sf:g}"]
    staging = Path(tempfile.mkdtemp(prefix=".tpchgen-", dir=out))
    try:
        try:
            completed = subprocess.run([*command, "--output-dir", str(staging)],
                                       capture_output=True, text=True, check=False)
        except OSError as exc:
            raise FlowSQLError(f"could not run {command[0]}: {exc}") from exc
        if completed.returncode != 0:
            detail = (completed.stderr or completed.stdout).strip()
            raise FlowSQLError(f"TPC-H generation at SF {sf:g} failed (exit status "
                               f"{completed.returncode}): {detail}")
        absent = missing_tables(staging)
        if absent:
            raise FlowSQLError(f"TPC-H generation at SF {sf:g} wrote no file for: "
                               f"{', '.join(absent)}")
        for table in TABLES:
            os.replace(table_path(staging, table), table_path(out, table))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
