"""``csv.ignore-parse-errors`` / ``json.ignore-parse-errors``: bad records are skipped and
counted, every good record survives unchanged, and without the option the scan still fails
naming the file and the line."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from flowsql.errors import CatalogError, DataError
from flowsql.planner.catalog import TableEntry
from flowsql.planner.physical import TableScanExec
from flowsql.planner.schema import Field
from flowsql.runtime.connectors.filesystem import PARSE_ERRORS_IGNORED, scan
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.source.table_scan import ScanOperator

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()),
                    ("amount", pa.decimal128(10, 2)), ("day", pa.date32())])

CSV_LINES = [
    "1,a,1.50,2024-01-01",
    "2,b,oops,2024-01-02",      # not a decimal
    "3,c,3.00,2024-01-03",
    "x,d,4.00,2024-01-04",      # not an integer
    "5,e,5.00,2024-13-45",      # not a date (converted after parsing)
    "6,f",                      # too few fields
    "7,g,7.25,",                # empty date: NULL, a good row
    "8,h,8.00,2024-01-08,extra",  # too many fields
    "9,,9.99,2024-01-09",        # empty string: '' (a good row)
]
CSV_GOOD = [
    (1, "a", Decimal("1.50"), dt.date(2024, 1, 1)),
    (3, "c", Decimal("3.00"), dt.date(2024, 1, 3)),
    (7, "g", Decimal("7.25"), None),
    (9, "", Decimal("9.99"), dt.date(2024, 1, 9)),
]


def _table(path: Path, fmt: str, **options: str) -> TableEntry:
    return TableEntry("t", SCHEMA, {"connector": "filesystem", "path": str(path),
                                    "format": fmt, **options})


def _rows(table: TableEntry, metrics: dict[str, Any] | None, batch_size: int = 100,
          columns: list[str] | None = None) -> list[tuple[Any, ...]]:
    columns = columns or SCHEMA.names
    batches = list(scan(table, columns, [], batch_size, metrics))
    assert all(b.num_rows <= batch_size for b in batches)
    out = pa.Table.from_batches(batches, pa.schema([SCHEMA.field(c) for c in columns]))
    return [tuple(r.values()) for r in out.to_pylist()]


def test_csv_bad_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("\n".join(CSV_LINES) + "\n")
    metrics: dict[str, Any] = {}
    assert _rows(_table(path, "csv", **{"csv.ignore-parse-errors": "true"}), metrics) == CSV_GOOD
    assert metrics == {PARSE_ERRORS_IGNORED: 5}


def test_csv_header_and_projection_with_ignore(tmp_path: Path) -> None:
    """Only the columns read are converted (as in Flink, whose CSV format converts the
    projected fields only), so a bad value in an unread column does not make the record
    bad; a wrong field count always does."""
    path = tmp_path / "t.csv"
    path.write_text("id,name,amount,day\n" + "\n".join(CSV_LINES))  # no final newline
    metrics: dict[str, Any] = {}
    table = _table(path, "csv", **{"format.ignore-parse-errors": "true",
                                   "csv.ignore-first-line": "true"})
    assert _rows(table, metrics, batch_size=1, columns=["name", "id"]) == \
        [("a", 1), ("b", 2), ("c", 3), ("e", 5), ("g", 7), ("", 9)]
    assert metrics == {PARSE_ERRORS_IGNORED: 3}


def test_csv_default_still_fails_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("\n".join(CSV_LINES) + "\n")
    with pytest.raises(DataError, match=rf"^{path}, line 2, column 'amount': cannot parse "
                                        r"'oops' as DECIMAL"):
        _rows(_table(path, "csv"), {})
    with pytest.raises(DataError, match=rf"^{path}, line 2"):
        _rows(_table(path, "csv", **{"csv.ignore-parse-errors": "false"}), {})


def test_csv_rows_already_delivered_are_not_repeated(tmp_path: Path) -> None:
    """A file larger than one Arrow read block: the fast path delivers the first blocks
    before it meets the bad line near the end; the tolerant re-read must go on after them."""
    n = 400_000
    lines = [f"{i},n{i % 10},{i % 1000}.25,2024-02-{1 + i % 28:02d}" for i in range(n)]
    bad_at = {n - 5, n - 3}
    for i in bad_at:
        lines[i] = f"{i},bad,1.0.0,2024-02-01"
    path = tmp_path / "big.csv"
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 2 * (1 << 22)
    metrics: dict[str, Any] = {}
    table = _table(path, "csv", **{"csv.ignore-parse-errors": "true"})
    batches = list(scan(table, ["id", "amount"], [], 50_000, metrics))
    ids = pa.concat_arrays([b.column(0) for b in batches]).to_pylist()
    assert ids == [i for i in range(n) if i not in bad_at]
    amounts = pa.concat_arrays([b.column(1) for b in batches]).to_pylist()
    assert amounts[:3] == [Decimal("0.25"), Decimal("1.25"), Decimal("2.25")]
    assert amounts[-1] == Decimal(f"{(n - 1) % 1000}.25")
    assert metrics == {PARSE_ERRORS_IGNORED: 2}


def _json_lines(tmp_path: Path) -> Path:
    lines = [
        json.dumps({"id": 1, "name": "a", "amount": 1.5, "day": "2024-01-01"}),
        json.dumps({"id": 2, "name": "b", "amount": 2, "day": "2024-01-02"}),
        '{"id": 3, "name": "c", "amount": 3',                                # truncated
        json.dumps({"id": "four", "name": "d", "amount": 4, "day": "2024-01-04"}),
        "",                                                                   # blank line
        json.dumps({"id": 5, "name": "e", "amount": 5, "day": "2024-02-30"}),  # no such date
        json.dumps({"id": 6, "name": None, "amount": None, "day": None, "x": 1}),
        json.dumps({"id": 7, "name": "g", "amount": 7.25, "day": "2024-01-07"}),
    ]
    path = tmp_path / "t.json"
    path.write_text("\n".join(lines) + "\n")
    return path


JSON_GOOD = [
    (1, "a", Decimal("1.50"), dt.date(2024, 1, 1)),
    (2, "b", Decimal("2.00"), dt.date(2024, 1, 2)),
    (6, None, None, None),
    (7, "g", Decimal("7.25"), dt.date(2024, 1, 7)),
]


def test_json_bad_rows_are_skipped_and_counted(tmp_path: Path) -> None:
    metrics: dict[str, Any] = {}
    table = _table(_json_lines(tmp_path), "json", **{"json.ignore-parse-errors": "true"})
    assert _rows(table, metrics, batch_size=2) == JSON_GOOD
    assert metrics == {PARSE_ERRORS_IGNORED: 3}


def test_json_default_still_fails_naming_file_and_line(tmp_path: Path) -> None:
    path = _json_lines(tmp_path)
    with pytest.raises(DataError, match=rf"^{path}, line 3: invalid JSON"):
        _rows(_table(path, "json"), {})


def test_json_late_conversion_error_after_rows_were_delivered(tmp_path: Path) -> None:
    """The fast JSON path converts dates batch by batch, so with small batches it delivers
    rows before it meets a bad date; those rows must not come again."""
    lines = [json.dumps({"id": i, "name": f"n{i}", "amount": i, "day": f"2024-03-{i:02d}"})
             for i in range(1, 8)]
    lines[5] = json.dumps({"id": 6, "name": "n6", "amount": 6, "day": "2024-03-99"})
    path = tmp_path / "t.json"
    path.write_text("\n".join(lines) + "\n")
    metrics: dict[str, Any] = {}
    table = _table(path, "json", **{"json.ignore-parse-errors": "true"})
    assert _rows(table, metrics, batch_size=2, columns=["id", "day"]) == \
        [(i, dt.date(2024, 3, i)) for i in (1, 2, 3, 4, 5, 7)]
    assert metrics == {PARSE_ERRORS_IGNORED: 1}


def test_option_value_must_be_boolean(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("1,a,1.00,2024-01-01\n")
    with pytest.raises(CatalogError, match="csv.ignore-parse-errors"):
        _rows(_table(path, "csv", **{"csv.ignore-parse-errors": "yes"}), {})


def test_scan_operator_reports_the_metric(tmp_path: Path) -> None:
    directory = tmp_path / "t"
    directory.mkdir()
    (directory / "a.csv").write_text("\n".join(CSV_LINES[:4]) + "\n")   # 2 bad
    (directory / "b.csv").write_text("\n".join(CSV_LINES[4:]) + "\n")   # 3 bad
    table = _table(directory, "csv", **{"csv.ignore-parse-errors": "true"})
    fields = tuple(Field.fresh(f.name, f.type) for f in SCHEMA)
    operator = ScanOperator(TableScanExec(table, fields, (), 10.0))
    context = OperatorContext("scan", {"execution.batch-size": "2"})
    operator.open(context)
    out = pa.Table.from_batches(list(operator.produce()))
    operator.close()
    assert [tuple(r.values()) for r in out.to_pylist()] == CSV_GOOD
    assert context.metrics[PARSE_ERRORS_IGNORED] == 5


@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_sql_select_skips_bad_rows(tmp_path: Path, mode: str) -> None:
    import flowsql

    path = tmp_path / "t.csv"
    path.write_text("\n".join(CSV_LINES) + "\n")
    session = flowsql.connect(**{"execution.runtime-mode": mode})
    session.sql(f"CREATE TABLE t (id INT, name STRING, amount DECIMAL(10, 2), day DATE) "
                f"WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv', "
                f"'csv.ignore-parse-errors' = 'true')")
    result = session.sql("SELECT id, name, amount, day FROM t").to_arrow()
    assert sorted(tuple(r.values()) for r in result.to_pylist()) == CSV_GOOD
    session.sql("CREATE TABLE strict (id INT, name STRING, amount DECIMAL(10, 2), day DATE) "
                f"WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')")
    with pytest.raises(DataError, match=rf"{path}, line 2"):
        session.sql("SELECT id, name, amount, day FROM strict").to_arrow()
