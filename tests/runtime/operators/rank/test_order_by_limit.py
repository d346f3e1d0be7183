"""ORDER BY ... LIMIT under a tiny memory budget: the top-N keeps only its best rows, never
spills, holds them against the budget, and fails clearly only when the kept rows alone
exceed it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import ResourceExhausted
from flowsql.planner.expressions import SortKey
from flowsql.planner.physical import TopNExec
from tests.harness.operators import duck, leaf
from tests.runtime.spill.spill_driver import drive_spilling


def _data(rows: int = 200_000) -> pa.Table:
    rng = np.random.default_rng(11)
    return pa.table({
        "k": pa.array(rng.permutation(rows), pa.int64(), mask=rng.random(rows) < 0.01),
        "s": pa.array([f"text-{v}" for v in rng.integers(0, 10**6, rows)]),
    })


def _top_n(table: pa.Table, limit: int, offset: int) -> tuple[TopNExec, list[pa.RecordBatch]]:
    node, _ = leaf(table)
    key = SortKey(node.fields[0].ref(), False, False)
    return TopNExec(node, (key,), limit, offset, float(limit)), table.to_batches(8192)


@pytest.mark.parametrize("limit, offset", [(10, 0), (100, 25), (1000, 0)])
def test_top_rows_at_a_tiny_budget_without_spilling(limit: int, offset: int,
                                                    tmp_path: Path) -> None:
    table = _data()
    node, batches = _top_n(table, limit, offset)
    out, metrics = drive_spilling(node, batches, budget="64kb", tmp=tmp_path)
    assert "spilled_bytes" not in metrics
    # the top keys are unique (NULLs sort last), so the rows are determined
    expected = duck(f"SELECT * FROM t ORDER BY k DESC NULLS LAST LIMIT {limit} "
                    f"OFFSET {offset}", t=table)
    assert out.num_rows == limit
    assert out.to_pylist() == expected.to_pylist()


def test_kept_rows_over_the_budget_fail_clearly(tmp_path: Path) -> None:
    node, batches = _top_n(_data(50_000), 40_000, 0)
    with pytest.raises(ResourceExhausted, match="execution.memory-budget"):
        drive_spilling(node, batches, budget="64kb", tmp=tmp_path)
