"""Table sinks behind ``SinkOperator``: print (Flink's line format, row kinds, identifier),
blackhole (counts only) and filesystem (part files, rolling, hidden in-progress files, and
a round trip through the filesystem source for every format)."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.planner.catalog import TableEntry
from flowsql.planner.config.units import parse_memory_size
from flowsql.planner.physical import ValuesExec
from flowsql.planner.physical_streaming import SinkExec
from flowsql.planner.schema import Field
from flowsql.runtime.changelog import with_row_kinds
from flowsql.runtime.connectors.filesystem import data_files, scan
from flowsql.runtime.connectors.sinks.print_sink import java_float
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.sink.connector_sink import RECORDS_WRITTEN, SinkOperator


def leaf(table: pa.Table) -> tuple[ValuesExec, None]:
    """An input node with the table's columns (the sink only reads its schema)."""
    return ValuesExec(tuple(Field.fresh(f.name, f.type) for f in table.schema), (), 0.0), None

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.timestamp("us")),
                    ("amount", pa.decimal128(10, 2)), ("price", pa.float64()),
                    ("day", pa.date32()), ("ok", pa.bool_())])
ROWS: list[dict[str, Any]] = [
    {"id": 1, "name": "a", "ts": dt.datetime(2024, 1, 1), "amount": Decimal("1.50"),
     "price": 1.0, "day": dt.date(2024, 1, 1), "ok": True},
    {"id": 2, "name": None, "ts": dt.datetime(2024, 1, 1, 12, 30, 5, 250_000),
     "amount": None, "price": 1e7, "day": None, "ok": None},
    {"id": 3, "name": "c, d", "ts": dt.datetime(2024, 1, 2, 0, 0, 0, 1),
     "amount": Decimal("0.05"), "price": 0.0001, "day": dt.date(2024, 2, 29), "ok": False},
    {"id": 4, "name": "", "ts": None, "amount": Decimal("-12345678.90"), "price": -2.5,
     "day": dt.date(1999, 12, 31), "ok": True},
]
LINES = [
    "+I[1, a, 2024-01-01T00:00, 1.50, 1.0, 2024-01-01, true]",
    "+I[2, null, 2024-01-01T12:30:05.250, null, 1.0E7, null, null]",
    "+I[3, c, d, 2024-01-02T00:00:00.000001, 0.05, 1.0E-4, 2024-02-29, false]",
    "+I[4, , null, -12345678.90, -2.5, 1999-12-31, true]",
]


def _run(options: dict[str, str], batches: list[pa.RecordBatch], schema: pa.Schema = SCHEMA,
         parallelism: int = 1, subtask: int = 0) -> dict[str, Any]:
    node, _ = leaf(schema.empty_table())
    table = TableEntry("out", schema, options)
    operator = SinkOperator(SinkExec(node, table, 0.0))
    context = OperatorContext("sink", {}, subtask_index=subtask, parallelism=parallelism)
    operator.open(context)
    for batch in batches:
        assert list(operator.process_batch(0, batch)) == []
    assert list(operator.end_input(0)) == []
    operator.close()
    return context.metrics


def _batches(rows: list[dict[str, Any]], size: int = 2) -> list[pa.RecordBatch]:
    # the input's column names differ from the table's: the sink matches by position
    table = pa.Table.from_pylist(rows, SCHEMA)
    table = table.rename_columns([f"c{i}" for i in range(len(SCHEMA))])
    return table.to_batches(max_chunksize=size)


# print ---------------------------------------------------------------------------------------

def test_print_writes_flink_row_strings(capsys: pytest.CaptureFixture[str]) -> None:
    metrics = _run({"connector": "print"}, _batches(ROWS))
    assert capsys.readouterr().out.splitlines() == LINES
    assert metrics == {RECORDS_WRITTEN: 4}


def test_print_updating_input_with_identifier(capsys: pytest.CaptureFixture[str]) -> None:
    schema = pa.schema([("word", pa.string()), ("cnt", pa.int64())])
    data = pa.record_batch([pa.array(["a", "a", "a", "b", "b"]),
                            pa.array([1, 1, 2, 7, None], pa.int64())], schema=schema)
    first = with_row_kinds(data.slice(0, 3), pa.array([0, 1, 2], pa.int8()))
    second = with_row_kinds(data.slice(3), pa.array([0, 3], pa.int8()))
    metrics = _run({"connector": "print", "print-identifier": "wc"}, [first, second], schema)
    assert capsys.readouterr().out.splitlines() == [
        "wc> +I[a, 1]", "wc> -U[a, 1]", "wc> +U[a, 2]", "wc> +I[b, 7]", "wc> -D[b, null]"]
    assert metrics == {RECORDS_WRITTEN: 5}


def test_print_parallel_subtask_prefix_and_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    schema = pa.schema([("x", pa.int32())])
    batch = pa.record_batch([pa.array([5], pa.int32())], schema=schema)
    _run({"connector": "print", "print-identifier": "p"}, [batch], schema, 3, 1)
    _run({"connector": "print"}, [batch], schema, 2, 0)
    _run({"connector": "print", "standard-error": "true"}, [batch], schema)
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["p:2> +I[5]", "1> +I[5]"]
    assert captured.err.splitlines() == ["+I[5]"]


def test_java_float_text() -> None:
    cases = {0.001: "0.001", 1234567.5: "1234567.5", 9999999.0: "9999999.0",
             1e21: "1.0E21", -2.5e-10: "-2.5E-10", 123.456: "123.456", 0.0: "0.0",
             float("nan"): "NaN", float("-inf"): "-Infinity", 100.0: "100.0"}
    assert {v: java_float(v) for v in cases} == cases
    assert java_float(0.1, single=True) == "0.1"


# blackhole -----------------------------------------------------------------------------------

def test_blackhole_counts_and_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    batches = _batches(ROWS, size=3)
    updating = with_row_kinds(batches[0].rename_columns(SCHEMA.names), 3)
    metrics = _run({"connector": "blackhole"}, [*batches, updating])
    assert metrics == {RECORDS_WRITTEN: 7}
    assert capsys.readouterr() == ("", "")


# filesystem ----------------------------------------------------------------------------------

def _visible(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_filesystem_round_trip_with_rolling(tmp_path: Path, fmt: str) -> None:
    directory = tmp_path / "out"
    options = {"connector": "filesystem", "path": str(directory), "format": fmt,
               "sink.rolling-policy.file-size": "1b"}
    many = [dict(r, id=r["id"] + 10 * k) for k in range(3) for r in ROWS]   # 12 rows
    metrics = _run(options, _batches(many, size=5))
    assert metrics == {RECORDS_WRITTEN: 12}
    names = _visible(directory)
    # every slice fills a 1-byte file: one file per input batch (5, 5, 2 rows)
    assert len(names) == 3
    assert all(n.startswith("part-") and n.endswith(f".{fmt}") for n in names)
    assert sorted(int(n.rsplit("-", 1)[1].split(".")[0]) for n in names) == [0, 1, 2]
    table = TableEntry("out", SCHEMA, options)
    read = pa.Table.from_batches(list(scan(table, SCHEMA.names, [], 100)), SCHEMA)
    expected = [dict(r) for r in many]
    if fmt == "csv":
        for r in expected:  # without a null literal an empty string field is ''
            r["name"] = "" if r["name"] is None else r["name"]
    assert sorted(read.to_pylist(), key=lambda r: r["id"]) == expected


def test_filesystem_one_file_below_the_rolling_size(tmp_path: Path) -> None:
    directory = tmp_path / "out"
    options = {"connector": "filesystem", "path": str(directory), "format": "csv",
               "csv.null-literal": "null", "csv.ignore-first-line": "true"}
    _run(options, _batches(ROWS, size=1))
    [name] = _visible(directory)
    text = (directory / name).read_text()
    assert text.splitlines()[0] == '"id","name","ts","amount","price","day","ok"'
    assert len(text.splitlines()) == 5
    table = TableEntry("out", SCHEMA, options)
    read = pa.Table.from_batches(list(scan(table, SCHEMA.names, [], 100)), SCHEMA)
    assert read.to_pylist() == ROWS   # with a null literal NULL strings survive


def test_filesystem_in_progress_file_is_hidden_until_closed(tmp_path: Path) -> None:
    directory = tmp_path / "out"
    options = {"connector": "filesystem", "path": str(directory), "format": "json",
               "sink.rolling-policy.file-size": "2 kb"}
    node, _ = leaf(SCHEMA.empty_table())
    table = TableEntry("out", SCHEMA, options)
    operator = SinkOperator(SinkExec(node, table, 0.0))
    operator.open(OperatorContext("sink"))
    for batch in _batches(ROWS):
        operator.process_batch(0, batch)
    hidden = _visible(directory)
    assert len(hidden) == 1 and hidden[0].startswith(".part-")
    assert data_files(str(directory)) == []     # readers see nothing yet
    operator.end_input(0)
    operator.close()
    [name] = _visible(directory)
    assert name.startswith("part-") and name.endswith("-0.json")
    assert len(data_files(str(directory))) == 1
    assert len((directory / name).read_text().splitlines()) == 4


def test_filesystem_rejects_retractions(tmp_path: Path) -> None:
    options = {"connector": "filesystem", "path": str(tmp_path / "o"), "format": "parquet"}
    batch = with_row_kinds(_batches(ROWS)[0].rename_columns(SCHEMA.names), 3)
    with pytest.raises(ExecutionError, match="cannot store updates or deletes"):
        _run(options, [batch])


def test_memory_sizes() -> None:
    assert [parse_memory_size(s) for s in ["128mb", "1 kb", "10", "2GB", "5 b"]] == \
        [128 << 20, 1024, 10, 2 << 30, 5]
