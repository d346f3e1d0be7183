"""A datagen source deals its rows to the subtasks in chunks by subtask index, so its
saved positions only mean something at the parallelism they were saved at: restored at
that parallelism every row comes once, at another the restore fails instead of losing or
repeating rows (when the restored source starts)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
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


def _open(subtask: int, parallelism: int,
          state: dict[str, pa.Table] | None = None) -> DatagenScanOperator:
    operator = DatagenScanOperator(NODE)
    operator.open(OperatorContext("datagen", {"execution.batch-size": "4"},
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


@pytest.mark.parametrize("parallelism", [1, 3])
def test_restore_at_another_parallelism_fails(parallelism: int) -> None:
    _, snapshots = _half_run()
    with pytest.raises(ExecutionError, match=f"saved at parallelism 2 cannot be restored at "
                                             f"parallelism {parallelism}"):
        next(_open(parallelism - 1, parallelism, merge_snapshots(snapshots)).produce())
