"""Table scan: columns by field name, filters applied exactly, zero-column scans count."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import Call, Literal
from flowsql.planner.physical import TableScanExec
from flowsql.planner.schema import Field
from tests.harness.operators import assert_rows, drive, duck

DATA = pa.table({
    "id": pa.array(range(20), pa.int64()),
    "name": pa.array([None if i % 5 == 0 else f"n{i % 4}" for i in range(20)],
                     pa.string_view()),
    "q": pa.array([i * 1.5 if i % 3 else None for i in range(20)]),
})


def _table(tmp_path: Path) -> TableEntry:
    path = tmp_path / "t.parquet"
    pq.write_table(DATA, path, row_group_size=4)
    return TableEntry("t", DATA.schema, {"connector": "filesystem", "path": str(path),
                                         "format": "parquet"})


def test_scan_reads_fields_in_plan_order_and_reapplies_filters(tmp_path: Path) -> None:
    table = _table(tmp_path)
    q, name = Field.fresh("q", T.FLOAT64), Field.fresh("name", T.STRING)
    filters = (Call("gt", (q.ref(), Literal(6.0, T.FLOAT64)), T.BOOL),
               Call("neq", (name.ref(), Literal("n1", T.STRING)), T.BOOL))
    out = drive(TableScanExec(table, (q, name), filters, 20.0),
                settings={"execution.batch-size": "3"})
    assert out.schema.types == [T.FLOAT64, T.STRING]
    assert_rows(out, duck("SELECT q, name::VARCHAR FROM t WHERE q > 6 AND name <> 'n1'",
                          t=DATA))


def test_scan_without_columns_keeps_row_count(tmp_path: Path) -> None:
    out = drive(TableScanExec(_table(tmp_path), (), (), 20.0))
    assert out.num_rows == 20
