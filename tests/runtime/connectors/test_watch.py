"""The watched-directory source (``'source.monitor-interval'``): files that appear while
the source runs are read once each, in name order; hidden files never; state survives a
snapshot/restore without repeating or losing rows; parallel subtasks split the files."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from flowsql.errors import ConfigError
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.config.units import parse_duration_ms
from flowsql.planner.expressions import Call, Literal
from flowsql.planner.physical import TableScanExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.source.watched_scan import WatchedScanOperator

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
INTERVAL = "50 ms"


def _node(directory: Path, **options: str) -> TableScanExec:
    table = TableEntry("w", SCHEMA, {"connector": "filesystem", "path": str(directory),
                                     "format": "csv", "source.monitor-interval": INTERVAL,
                                     **options})
    return TableScanExec(table, tuple(Field.fresh(f.name, f.type) for f in SCHEMA), (), 0.0)


def _open(node: TableScanExec, subtask: int = 0, parallelism: int = 1,
          batch_size: int = 100) -> WatchedScanOperator:
    operator = WatchedScanOperator(node)
    operator.open(OperatorContext("watch", {"execution.batch-size": str(batch_size)},
                                  subtask_index=subtask, parallelism=parallelism))
    return operator


def _poll_rows(operator: WatchedScanOperator, want: int, timeout: float = 5.0
               ) -> list[tuple[Any, ...]]:
    """Poll until ``want`` rows came (then poll on briefly to catch any extra row)."""
    rows: list[tuple[Any, ...]] = []
    deadline = time.monotonic() + timeout
    while len(rows) < want and time.monotonic() < deadline:
        rows.extend(_rows(operator.poll(0.02)))
    settle = time.monotonic() + 0.2   # four more listings: nothing may come again
    while time.monotonic() < settle:
        rows.extend(_rows(operator.poll(0.02)))
    return rows


def _rows(batches: list[pa.RecordBatch] | None) -> list[tuple[Any, ...]]:
    assert batches is not None          # an unbounded source never ends
    return [tuple(r.values()) for b in batches for r in b.to_pylist()]


def _write(path: Path, rows: list[tuple[int, str]]) -> None:
    """Write atomically (hidden name, then rename), as a well-behaved producer does."""
    hidden = path.with_name("." + path.name + ".tmp")
    hidden.write_text("".join(f"{i},{s}\n" for i, s in rows))
    hidden.rename(path)


def test_durations() -> None:
    assert [parse_duration_ms(t) / 1000
            for t in ["1 s", "500 ms", "1 min", "2h", "250", "3 seconds"]] \
        == [1.0, 0.5, 60.0, 7200.0, 0.25, 3.0]
    with pytest.raises(ConfigError, match="invalid duration"):
        parse_duration_ms("1 fortnight")


def test_new_files_are_read_once_in_name_order(tmp_path: Path) -> None:
    directory = tmp_path / "w"
    operator = _open(_node(directory))
    started = time.monotonic()
    assert operator.poll(0.1) == []          # no directory yet: nothing, and no error
    assert time.monotonic() - started < 0.5  # waited at most about max_wait_s
    directory.mkdir()
    (directory / ".hidden.csv").write_text("100,hidden\n")
    (directory / "_SUCCESS").write_text("")
    (directory / "_tmp").mkdir()
    (directory / "_tmp" / "x.csv").write_text("101,underscore dir\n")
    _write(directory / "b.csv", [(1, "b1"), (2, "b2")])
    _write(directory / "a.csv", [(3, "a1")])
    assert _poll_rows(operator, 3) == [(3, "a1"), (1, "b1"), (2, "b2")]
    (directory / "sub").mkdir()
    _write(directory / "sub" / "c.csv", [(4, "c1")])
    _write(directory / "a.csv", [(5, "a changed")])   # a seen file is not read again
    assert _poll_rows(operator, 1) == [(4, "c1")]
    _write(directory / "0.csv", [(6, "late but first by name")])
    assert _poll_rows(operator, 1) == [(6, "late but first by name")]
    operator.close()


def test_projection_and_filters_apply(tmp_path: Path) -> None:
    directory = tmp_path / "w"
    directory.mkdir()
    node = _node(directory)
    id_field = node.fields[0]
    keep = Call("gt", (id_field.ref(), Literal(1, pa.int64())), T.BOOL)
    projected = TableScanExec(node.table, (node.fields[1],), (), 0.0)
    filtered = TableScanExec(node.table, node.fields, (keep,), 0.0)
    _write(directory / "a.csv", [(1, "x"), (2, "y"), (3, "z")])
    assert _poll_rows(_open(projected), 3) == [("x",), ("y",), ("z",)]
    assert _poll_rows(_open(filtered), 2) == [(2, "y"), (3, "z")]


def test_snapshot_and_restore_continue_without_repeating(tmp_path: Path) -> None:
    directory = tmp_path / "w"
    directory.mkdir()
    _write(directory / "a.csv", [(i, f"a{i}") for i in range(5)])
    _write(directory / "b.csv", [(i, f"b{i}") for i in range(5, 8)])
    node = _node(directory)
    first = _open(node, batch_size=2)
    before: list[tuple[Any, ...]] = []
    while len(before) < 4:                   # two batches of a.csv
        before.extend(_rows(first.poll(0.02)))
    snapshot = first.snapshot_state(1)
    first.close()
    assert before == [(0, "a0"), (1, "a1"), (2, "a2"), (3, "a3")]
    assert snapshot["list/reading"].to_pylist() == [
        {"path": "a.csv", "emitted": 4}, {"path": "b.csv", "emitted": 0}]

    second = _open(node, batch_size=2)
    second.restore_state(snapshot)
    _write(directory / "c.csv", [(9, "c9")])
    after = _poll_rows(second, 5)
    assert after == [(4, "a4"), (5, "b5"), (6, "b6"), (7, "b7"), (9, "c9")]
    done = second.snapshot_state(2)
    assert sorted(done["list/done"]["path"].to_pylist()) == ["a.csv", "b.csv", "c.csv"]
    assert done["list/reading"].num_rows == 0

    third = _open(node)                      # restored after everything was read
    third.restore_state(done)
    assert _poll_rows(third, 0) == []


def test_parallel_subtasks_split_the_files(tmp_path: Path) -> None:
    directory = tmp_path / "w"
    directory.mkdir()
    for k in range(12):
        _write(directory / f"f{k:02d}.csv", [(k, f"f{k}")])
    node = _node(directory)
    subtasks = [_open(node, i, 3) for i in range(3)]
    # poll all three until the 12 rows came, however the files were split; then each
    # subtask settles, so a file read twice would still show up
    per_subtask: list[list[tuple[Any, ...]]] = [[] for _ in subtasks]
    deadline = time.monotonic() + 10
    while sum(map(len, per_subtask)) < 12 and time.monotonic() < deadline:
        for rows, subtask in zip(per_subtask, subtasks):
            rows.extend(_rows(subtask.poll(0.02)))
    for rows, subtask in zip(per_subtask, subtasks):
        rows.extend(_poll_rows(subtask, 0))
    assert sorted(r for rows in per_subtask for r in rows) == [(k, f"f{k}") for k in range(12)]
    assert sum(1 for rows in per_subtask if rows) >= 2   # the work is actually split


def test_ignored_parse_errors_are_counted(tmp_path: Path) -> None:
    directory = tmp_path / "w"
    directory.mkdir()
    (directory / "a.csv").write_text("1,ok\nx,bad\n2,fine\n")
    operator = _open(_node(directory, **{"csv.ignore-parse-errors": "true"}))
    assert _poll_rows(operator, 2) == [(1, "ok"), (2, "fine")]
    assert operator.context.metrics["parse_errors_ignored"] == 1


def test_sql_streaming_query_over_a_watched_directory(tmp_path: Path) -> None:
    import flowsql

    directory = tmp_path / "w"
    directory.mkdir()
    _write(directory / "a.csv", [(1, "a"), (2, "b")])
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    session.sql(f"CREATE TABLE src (id BIGINT, name STRING) WITH ('connector' = "
                f"'filesystem', 'path' = '{directory}', 'format' = 'csv', "
                f"'source.monitor-interval' = '100 ms')")
    got: list[dict[str, Any]] = []
    for batch in session.sql("SELECT name, id * 10 AS x FROM src WHERE id > 1").stream():
        got.extend(batch.to_pylist())
        if len(got) == 1:   # the first file is read: now a second one appears
            _write(directory / ".hidden.csv", [(50, "hidden")])
            _write(directory / "b.csv", [(3, "c"), (0, "filtered")])
        if len(got) >= 2:
            break
    assert got == [{"op": "+I", "name": "b", "x": 20}, {"op": "+I", "name": "c", "x": 30}]
