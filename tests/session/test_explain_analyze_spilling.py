"""EXPLAIN ANALYZE shows what an operator spilled to disk under a small memory budget:
the bytes and runs in the figures table and ``spilled=`` on the operator's line, only
for operators that spilled; the spill directory is empty after the statement."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql

QUERY = "SELECT k, s FROM t ORDER BY s DESC, k"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("spilling") / "t.parquet"
    rng = np.random.default_rng(5)
    rows = 100_000
    pq.write_table(pa.table({
        "k": pa.array(rng.integers(0, 1000, rows), pa.int64()),
        "s": pa.array([f"value-{v:05d}" for v in rng.integers(0, 20_000, rows)]),
    }), path)
    return path


def _session(data: Path, **settings: str) -> flowsql.Session:
    session = flowsql.connect(**settings)
    session.sql(f"CREATE TABLE t WITH ('connector'='filesystem', 'path'='{data}', "
                "'format'='parquet')")
    return session


@pytest.mark.parametrize("parallelism", [1, 2])
def test_sort_spill_is_shown(data: Path, tmp_path: Path, parallelism: int) -> None:
    session = _session(data, **{"execution.memory-budget": "256kb",
                                "io.tmp.dirs": str(tmp_path),
                                "parallelism.default": str(parallelism)})
    result = session.sql("EXPLAIN ANALYZE " + QUERY)
    analysis = result.analysis
    assert analysis is not None and result.plan_text is not None
    rows = analysis.to_pylist()
    spilled = [r for r in rows if r["spilled_bytes"]]
    assert [r["node"] for r in spilled] == ["SortExec"]
    assert spilled[0]["spilled_runs"] > 1
    lines = result.plan_text.split("\n")
    marked = [line for line in lines if " spilled=" in line]
    assert len(marked) == 1 and marked[0].lstrip().startswith(spilled[0]["description"])
    assert marked[0].endswith(f"in {spilled[0]['spilled_runs']} runs")
    assert all(r["spilled_bytes"] == 0 for r in rows if r not in spilled
               and r["actual_rows"] is not None)
    assert list(os.walk(tmp_path)) == [(str(tmp_path), [], [])]
    unlimited = _session(data).sql(QUERY).to_arrow()
    assert session.sql(QUERY).to_arrow().equals(unlimited)
    session.close()


def test_nothing_spilled_shows_nothing(data: Path) -> None:
    result = _session(data).sql("EXPLAIN ANALYZE " + QUERY)
    assert result.analysis is not None and result.plan_text is not None
    assert set(result.analysis.column("spilled_bytes").to_pylist()) == {0}
    assert " spilled=" not in result.plan_text
