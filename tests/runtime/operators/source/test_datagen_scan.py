"""Datagen scan: ``restore(snapshot(s))`` behaves as ``s`` -- a scan restored from a
snapshot taken after some batches continues with exactly the rows an uninterrupted scan
gives after them (narrowed to the scanned fields and filtered), at parallelism 1 and 2."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import Call, Literal
from flowsql.planner.physical import TableScanExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.source.datagen_scan import DatagenScanOperator

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("score", pa.int32())])
OPTIONS = {"connector": "datagen", "number-of-rows": "30", "rows-per-second": "0",
           "fields.id.kind": "sequence", "fields.id.start": "0", "fields.id.end": "29",
           "fields.name.length": "5", "fields.score.min": "0", "fields.score.max": "9"}
SETTINGS = {"execution.batch-size": "4", "execution.runtime-mode": "streaming"}


def _node() -> TableScanExec:
    """SELECT score, id FROM t WHERE score > 2: two of three columns, reordered, filtered."""
    score, id_ = Field.fresh("score", T.INT32), Field.fresh("id", T.INT64)
    keep = Call("gt", (score.ref(), Literal(2, T.INT32)), T.BOOL)
    return TableScanExec(TableEntry("t", SCHEMA, OPTIONS), (score, id_), (keep,), 30.0)


def _opened(node: TableScanExec, subtask: int, parallelism: int) -> DatagenScanOperator:
    operator = DatagenScanOperator(node)
    operator.open(OperatorContext("datagen", dict(SETTINGS), subtask_index=subtask,
                                  parallelism=parallelism))
    return operator


def _rows(batches: Iterator[pa.RecordBatch] | list[pa.RecordBatch]) -> list[dict[str, int]]:
    return [row for batch in batches for row in batch.to_pylist()]


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize("taken", [0, 1, 3])
def test_restored_scan_continues_where_the_snapshot_was_taken(taken: int,
                                                              parallelism: int) -> None:
    node = _node()
    for subtask in range(parallelism):
        whole = _rows(_opened(node, subtask, parallelism).produce())
        first = _opened(node, subtask, parallelism)
        produced = first.produce()
        head = [next(produced) for _ in range(taken)]
        snapshot = first.snapshot_state(1)
        first.close()
        second = _opened(node, subtask, parallelism)
        second.restore_state(snapshot)
        assert _rows(head) + _rows(second.produce()) == whole


def test_uninterrupted_scan_is_the_generated_rows_narrowed_and_filtered() -> None:
    """Anchors the comparison above: ids 0..29 once each, only scores above 2."""
    rows = _rows(_opened(_node(), 0, 1).produce())
    assert 0 < len(rows) < 30
    assert [r["id"] for r in rows] == sorted({r["id"] for r in rows})
    assert all(r["score"] > 2 and list(r) == ["score", "id"] for r in rows)
