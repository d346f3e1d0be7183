"""A datagen source deals its rows to the subtasks in chunks by subtask index; restored at
the parallelism of its snapshot each subtask goes on with its own deal, restored at
another the rows not yet emitted are dealt anew: every row comes exactly once either way,
across any chain of rescales."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.planner.catalog import TableEntry
from flowsql.planner.physical import TableScanExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.source.datagen_scan import DatagenScanOperator
from flowsql.runtime.state.store import merge_snapshots

SCHEMA = pa.schema([("id", pa.int64())])
TABLE = TableEntry("g", SCHEMA, {"connector": "datagen", "number-of-rows": "40",
                                 "rows-per-second": "0", "fields.id.kind": "sequence",
                                 "fields.id.start": "0", "fields.id.end": "1000"})
NODE = TableScanExec(TABLE, (Field.fresh("id", pa.int64()),), (), 40.0)


def _open(subtask: int, parallelism: int, state: dict[str, pa.Table] | None = None,
          size: int = 4) -> DatagenScanOperator:
    operator = DatagenScanOperator(NODE)
    operator.open(OperatorContext("datagen", {"execution.batch-size": str(size)},
                                  subtask_index=subtask, parallelism=parallelism))
    if state is not None:
        operator.restore_state(state)
    return operator


def _half_run() -> tuple[list[int], list[dict[str, pa.Table]]]:
    """Subtask 0 of 2 emits three batches, subtask 1 one; both snapshot."""
    ids: list[int] = []
    snapshots = []
    for subtask, batches in [(0, 3), (1, 1)]:
        operator = _open(subtask, 2)
        produced = operator.produce()
        for _ in range(batches):
            ids += next(produced).column(0).to_pylist()
        snapshots.append(operator.snapshot_state(1))
    return ids, snapshots


@pytest.mark.parametrize("merged", [False, True], ids=["own", "merged"])
def test_restore_at_the_same_parallelism_emits_every_row_once(merged: bool) -> None:
    ids, snapshots = _half_run()
    for subtask in range(2):
        state = merge_snapshots(snapshots) if merged else snapshots[subtask]
        ids += [i for b in _open(subtask, 2, state).produce() for i in b.column(0).to_pylist()]
    assert sorted(ids) == list(range(40))


def _partly(state: dict[str, pa.Table] | None, parallelism: int, batches: list[int],
            size: int = 4) -> tuple[list[int], list[dict[str, pa.Table]]]:
    """Each subtask restored from ``state`` emits its number of ``batches``, then
    snapshots."""
    ids: list[int] = []
    snapshots = []
    for subtask in range(parallelism):
        operator = _open(subtask, parallelism, state, size)
        produced = operator.produce()
        for _ in range(batches[subtask]):
            ids += next(produced, pa.record_batch([pa.array([], pa.int64())], ["id"])
                        ).column(0).to_pylist()
        snapshots.append(operator.snapshot_state(1))
    return ids, snapshots


@pytest.mark.parametrize("parallelism", [1, 3, 4])
def test_restore_at_another_parallelism_emits_every_row_once(parallelism: int) -> None:
    ids, snapshots = _half_run()
    state = merge_snapshots(snapshots)
    ids += [i for subtask in range(parallelism)
            for b in _open(subtask, parallelism, state).produce()
            for i in b.column(0).to_pylist()]
    assert sorted(ids) == list(range(40))


@pytest.mark.parametrize("sizes", [(4, 4, 4), (4, 3, 5)], ids=["same-size", "other-sizes"])
def test_a_chain_of_rescales_emits_every_row_once(sizes: tuple[int, int, int]) -> None:
    """2 -> 3 -> 1 -> 2 with uneven progress, some subtasks snapshotted before they
    started, and (``other-sizes``) another chunk size after each restore."""
    ids, snapshots = _half_run()
    more, snapshots = _partly(merge_snapshots(snapshots), 3, [2, 0, 1], sizes[0])
    ids += more
    more, snapshots = _partly(merge_snapshots(snapshots), 1, [1], sizes[1])
    ids += more
    more, snapshots = _partly(merge_snapshots(snapshots), 2, [0, 2], sizes[2])
    ids += more
    state = merge_snapshots(snapshots)
    ids += [i for subtask in range(3) for b in _open(subtask, 3, state).produce()
            for i in b.column(0).to_pylist()]
    assert sorted(ids) == list(range(40))


def test_a_snapshot_before_the_first_batch_keeps_the_throttled_deal() -> None:
    """Restored from a checkpoint taken before any row, one subtask is snapshotted again
    before its first batch and the other is not: both must deal chunks of the same
    (throttled) size, or their chunks overlap and rows come twice."""
    throttled = TableScanExec(TableEntry("g", SCHEMA, {**TABLE.options,
                                                       "rows-per-second": "400"}),
                              NODE.fields, (), 40.0)
    settings = {"execution.batch-size": "64", "execution.buffer-timeout": "100 ms"}

    def opened(subtask: int, state: dict[str, pa.Table] | None) -> DatagenScanOperator:
        operator = DatagenScanOperator(throttled)
        operator.open(OperatorContext("datagen", settings, subtask_index=subtask,
                                      parallelism=2))
        if state is not None:
            operator.restore_state(state)
        return operator

    fresh = merge_snapshots([opened(s, None).snapshot_state(1) for s in range(2)])
    first, second = opened(0, fresh), opened(1, fresh)
    first.snapshot_state(2)  # a checkpoint before its first batch
    ids = [i for operator in (first, second) for b in operator.produce()
           for i in b.column(0).to_pylist()]
    assert sorted(ids) == list(range(40))
