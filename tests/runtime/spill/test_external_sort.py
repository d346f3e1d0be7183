"""The external sort's contracts beyond the sort operator: pre-sorted pieces merged with
ties in the order they were added, a budget too small for a merge fails clearly, and
closing early deletes the runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import ResourceExhausted
from flowsql.planner import types as T
from flowsql.planner.expressions import Literal, SortKey
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.spill import SpillSpace
from flowsql.runtime.spill.external_sort import ExternalSorter
from tests.runtime.spill.spill_driver import spill_files

KEY = (SortKey(Literal(0, T.INT64)),)  # the sorter compares its last column only


def _context(tmp: Path, budget: int | None) -> OperatorContext:
    return OperatorContext("sorter", {}, MemoryBudget(budget), SpillSpace([str(tmp)]))


def _piece(keys: np.ndarray, tag: int) -> pa.Table:
    return pa.table({"tag": pa.array(np.full(len(keys), tag)), "k": pa.array(keys)})


def test_sorted_pieces_merge_with_ties_in_the_order_added(tmp_path: Path) -> None:
    context = _context(tmp_path, 32 * 1024)
    sorter = ExternalSorter(context, KEY, "test", batch_rows=500)
    rng = np.random.default_rng(1)
    pieces = [_piece(np.sort(rng.integers(0, 50, 3000)), tag) for tag in range(12)]
    for piece in pieces:
        sorter.add_sorted(piece)
    out = pa.concat_tables(list(sorter.sorted_tables()))
    sorter.close()
    expected = pa.concat_tables(pieces)
    order = np.lexsort((np.arange(expected.num_rows), expected.column("k").to_numpy()))
    assert out.to_pylist() == expected.take(pa.array(order)).to_pylist()
    assert spill_files(tmp_path) == []
    assert context.memory.used == 0


def test_a_budget_below_two_merge_blocks_fails_clearly(tmp_path: Path) -> None:
    context = _context(tmp_path, 1024)
    sorter = ExternalSorter(context, KEY, "test", batch_rows=100)
    for tag in range(4):
        sorter.add(_piece(np.arange(100, 0, -1), tag).to_batches()[0])
    with pytest.raises(ResourceExhausted, match="execution.memory-budget"):
        list(sorter.sorted_tables())
    sorter.close()
    assert spill_files(tmp_path) == []


def test_closing_before_the_merge_deletes_the_runs(tmp_path: Path) -> None:
    context = _context(tmp_path, 4096)
    sorter = ExternalSorter(context, KEY, "test", batch_rows=100)
    for tag in range(10):
        sorter.add(_piece(np.arange(200), tag).to_batches()[0])
    assert sorter.spilled and spill_files(tmp_path)
    sorter.close()
    assert spill_files(tmp_path) == [] and context.memory.used == 0
