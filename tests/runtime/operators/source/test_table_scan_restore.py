"""The bounded filesystem scan resumes where its snapshot was taken: for every cut between
two batches, the batches before the cut plus a restored scan's batches equal an
uninterrupted scan's, in order (Parquet row groups and CSV files, with filters that empty
some batches); the parallel split scan does the same when restored at another parallelism;
a changed file listing fails naming the file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import Call, Literal
from flowsql.planner.physical import TableScanExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.source.table_scan import ScanOperator
from flowsql.runtime.parallel.split_scan import SplitScanOperator
from flowsql.runtime.state.store import merge_snapshots

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
SETTINGS = {"execution.batch-size": "3"}


def _rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": ids, "name": [f"n{i % 4}" for i in ids]}, schema=SCHEMA)


def _parquet_table(directory: Path) -> TableEntry:
    directory.mkdir()
    for index, (start, count) in enumerate([(0, 10), (10, 7), (17, 5)]):
        pq.write_table(_rows(start, count), directory / f"part-{index}.parquet",
                       row_group_size=4)
    return TableEntry("t", SCHEMA, {"connector": "filesystem", "path": str(directory),
                                    "format": "parquet"})


def _csv_table(directory: Path) -> TableEntry:
    directory.mkdir()
    for index, (start, count) in enumerate([(0, 8), (8, 1), (9, 6)]):
        rows = _rows(start, count).to_pylist()
        (directory / f"part-{index}.csv").write_text(
            "".join(f"{r['id']},{r['name']}\n" for r in rows))
    return TableEntry("t", SCHEMA, {"connector": "filesystem", "path": str(directory),
                                    "format": "csv"})


def _node(table: TableEntry, filtered: bool) -> TableScanExec:
    fields = (Field.fresh("id", T.INT64), Field.fresh("name", T.STRING))
    # id % 4 != 1 drops rows everywhere, and whole batches of the CSV's one-row file
    filters = (Call("neq", (fields[1].ref(), Literal("n1", T.STRING)), T.BOOL),) \
        if filtered else ()
    return TableScanExec(table, fields, filters, 22.0)


def _open(node: TableScanExec, subtask: int = 0, parallelism: int = 1,
          restore: dict[str, pa.Table] | None = None) -> ScanOperator:
    kind = ScanOperator if parallelism == 1 else SplitScanOperator
    operator = kind(node)
    operator.open(OperatorContext("scan", dict(SETTINGS), subtask_index=subtask,
                                  parallelism=parallelism))
    if restore is not None:
        operator.restore_state(restore)
    return operator


def _ids(batches: list[pa.RecordBatch]) -> list[Any]:
    return [i for b in batches for i in b.column(0).to_pylist()]


def _take(batches: Iterator[pa.RecordBatch], count: int) -> list[pa.RecordBatch]:
    return [batch for _, batch in zip(range(count), batches)]


@pytest.mark.parametrize("filtered", [False, True], ids=["all", "filtered"])
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_restore_at_every_cut_resumes_after_the_last_batch(tmp_path: Path, fmt: str,
                                                           filtered: bool) -> None:
    table = (_parquet_table if fmt == "parquet" else _csv_table)(tmp_path / "t")
    node = _node(table, filtered)
    expected = list(_open(node).produce())
    expected_ids = _ids(expected)
    total = 22 if fmt == "parquet" else 15
    assert expected_ids == [i for i in range(total) if not filtered or i % 4 != 1]
    for cut in range(len(expected) + 1):
        first = _open(node)
        before = _take(first.produce(), cut)
        snapshot = first.snapshot_state(1)
        after = list(_open(node, restore=snapshot).produce())
        assert _ids(before + after) == expected_ids, f"cut after batch {cut}"
        assert [b.num_rows for b in before + after] == [b.num_rows for b in expected]


def test_restore_of_a_finished_scan_emits_nothing(tmp_path: Path) -> None:
    node = _node(_parquet_table(tmp_path / "t"), filtered=False)
    first = _open(node)
    assert len(_ids(list(first.produce()))) == 22
    assert list(_open(node, restore=first.snapshot_state(1)).produce()) == []


def test_snapshot_before_the_scan_starts_restores_a_fresh_scan(tmp_path: Path) -> None:
    node = _node(_csv_table(tmp_path / "t"), filtered=False)
    snapshot = _open(node).snapshot_state(1)
    assert _ids(list(_open(node, restore=snapshot).produce())) == list(range(15))


def test_snapshot_after_restore_keeps_the_restored_position(tmp_path: Path) -> None:
    """A restored scan snapshotted before it produced anything saves where it resumes."""
    node = _node(_parquet_table(tmp_path / "t"), filtered=False)
    first = _open(node)
    before = _take(first.produce(), 3)
    again = _open(node, restore=_open(node, restore=first.snapshot_state(1)).snapshot_state(2))
    assert _ids(before + list(again.produce())) == list(range(22))


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("old, new", [(2, 2), (2, 3), (3, 1), (2, 1)])
def test_split_scan_rescaled_restore_reads_every_row_once(tmp_path: Path, fmt: str,
                                                          old: int, new: int) -> None:
    table = (_parquet_table if fmt == "parquet" else _csv_table)(tmp_path / "t")
    node = _node(table, filtered=False)
    total = 22 if fmt == "parquet" else 15
    for cut in range(4):
        emitted: list[pa.RecordBatch] = []
        snapshots = []
        for subtask in range(old):
            operator = _open(node, subtask, old)
            emitted += _take(operator.produce(), cut + subtask)  # subtasks stand apart
            snapshots.append(operator.snapshot_state(1))
        for subtask in range(new):
            state = snapshots[subtask] if new == old else merge_snapshots(snapshots)
            emitted += _open(node, subtask, new, restore=state).produce()
        assert sorted(_ids(emitted)) == list(range(total)), f"cut {cut}"


def _half_read(node: TableScanExec) -> dict[str, pa.Table]:
    operator = _open(node)
    _take(operator.produce(), 2)
    return operator.snapshot_state(1)


@pytest.mark.parametrize("change, message", [
    ("remove", "part-2.parquet' was part of the table when the checkpoint was taken and is "
               "gone now"),
    ("add", "part-3.parquet' was added after the checkpoint was taken"),
    ("rewrite", "part-1.parquet' changed since the checkpoint was taken"),
])
def test_restore_over_changed_files_fails_naming_the_file(tmp_path: Path, change: str,
                                                          message: str) -> None:
    directory = tmp_path / "t"
    node = _node(_parquet_table(directory), filtered=False)
    snapshot = _half_read(node)
    if change == "remove":
        (directory / "part-2.parquet").unlink()
    elif change == "add":
        pq.write_table(_rows(100, 3), directory / "part-3.parquet")
    else:
        pq.write_table(_rows(10, 9), directory / "part-1.parquet", row_group_size=4)
    with pytest.raises(ExecutionError, match=message.replace(".", r"\.")):
        _open(node, restore=snapshot)
