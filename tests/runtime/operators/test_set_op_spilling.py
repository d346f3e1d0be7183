"""Set operations under a tiny memory budget: both inputs spill into hash partition pairs;
the result equals DuckDB's and the unlimited-budget run's (as multisets), and no spill
file is left behind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.physical import SetOpExec
from flowsql.planner.schema import Field
from tests.harness.operators import duck, leaf
from tests.runtime.spill.spill_driver import drive_spilling


def _side(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array([f"word-{i:02d}" for i in range(40)], dtype=object)
    return pa.table({
        "a": pa.array(rng.integers(0, 3000, rows), pa.int64(), mask=rng.random(rows) < 0.02),
        "b": pa.array(words[rng.integers(0, 40, rows)], pa.string(),
                      mask=rng.random(rows) < 0.02),
    })


def _sorted(table: pa.Table) -> pa.Table:
    table = table.rename_columns(["a", "b"])
    return table.sort_by([("a", "ascending"), ("b", "ascending")])


@pytest.mark.parametrize("budget", ["64kb", "1mb"])
@pytest.mark.parametrize("kind, all_rows", [("union", False), ("intersect", False),
                                            ("intersect", True), ("except", False),
                                            ("except", True)])
def test_spilled_set_operation_equals_duckdb(kind: str, all_rows: bool, budget: str,
                                             tmp_path: Path) -> None:
    left, right = _side(80_000, 1), _side(60_000, 2)
    ln, _ = leaf(left)
    rn, _ = leaf(right)
    fields = (Field.fresh("a", T.INT64), Field.fresh("b", T.STRING))
    node = SetOpExec(ln, rn, kind, all_rows, fields, 1.0)
    inputs = (left.to_batches(4096), right.to_batches(4096))
    out, metrics = drive_spilling(node, *inputs, budget=budget, tmp=tmp_path / "s")
    unlimited, none = drive_spilling(node, *inputs, budget=None, tmp=tmp_path / "u")
    assert metrics["spilled_runs"] > 2 and "spilled_runs" not in none
    op = f"{kind.upper()}{' ALL' if all_rows else ''}"
    expected = duck(f"SELECT * FROM l {op} SELECT * FROM r", l=left, r=right)
    assert out.num_rows > 0
    assert _sorted(out).equals(_sorted(expected))
    assert _sorted(out).equals(_sorted(unlimited))
