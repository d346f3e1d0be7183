"""The table the UDF tests query, written as Parquet (two files, so a parallel scan
splits it) and registered in DuckDB as the oracle."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROWS = pa.table({
    "k": pa.array(["a", "b", None, "a", "b", "a", "c", None, "a", "b", "c", "a"]),
    "v": pa.array([3, 1, 4, None, 5, 9, 2, 6, 5, 3, 5, 8], pa.int64()),
    "w": pa.array([1.5, 2.0, 0.5, 1.0, None, 2.5, 1.0, 3.0, 0.5, 1.0, 2.0, 1.0]),
    "s": pa.array(["x", "y", "z", "x", None, "q", "r", "s", "t", "u", "v", "w"]),
})


def write_rows(directory: Path) -> Path:
    """ROWS as two Parquet files under ``directory``/rows; returns that directory."""
    root = directory / "rows"
    root.mkdir(parents=True, exist_ok=True)
    pq.write_table(ROWS.slice(0, 6), root / "part-0.parquet")
    pq.write_table(ROWS.slice(6), root / "part-1.parquet")
    return root
