"""How the shell shows a streaming query's result, by ``sql-client.execution.result-mode``
(Flink's setting): ``tableau`` prints ``op | col | ...`` lines as changes come (a header
first), ``changelog`` prints every change in Flink's row shape (``+U[apple, 3]``), ``table``
opens the full-screen view of the current result (``shell.table_view``).

:class:`MaterializedResult` applies a changelog to the rows it describes, as the table view
shows them: an insert (``+I``, ``+U``) adds a row, a retraction (``-U``, ``-D``) removes one
equal row. It works row by row in Python: it serves a screen, not a pipeline.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pyarrow as pa

from flowsql.planner.config.settings import SettingValues

__all__ = ["RESULT_MODE", "MaterializedResult", "result_mode"]

RESULT_MODE = "sql-client.execution.result-mode"


def result_mode(settings: dict[str, str]) -> str:
    """The session's result mode: tableau, changelog or table."""
    return str(SettingValues(settings).get(RESULT_MODE))


class MaterializedResult:
    """The rows a changelog describes so far, kept in first-insert order; thread-safe (the
    query's thread applies changes while the view's thread reads)."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self._rows: Counter[tuple[Any, ...]] = Counter()
        self._lock = threading.Lock()
        self.changes = 0

    def apply(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Apply changes whose first column is the row kind (``op``)."""
        ops = batch.column(0).to_pylist()
        values = list(zip(*(batch.column(i).to_pylist() for i in range(1, batch.num_columns))))
        if batch.num_columns == 1:
            values = [()] * batch.num_rows
        with self._lock:
            for op, row in zip(ops, values):
                if op in ("+I", "+U"):
                    self._rows[row] += 1
                elif self._rows[row] > 1:
                    self._rows[row] -= 1
                else:
                    self._rows.pop(row, None)
            self.changes += len(ops)

    @property
    def row_count(self) -> int:
        with self._lock:
            return sum(self._rows.values())

    def table(self) -> pa.Table:
        """The current rows (a row inserted twice and not retracted shows twice)."""
        with self._lock:
            rows = [row for row, count in self._rows.items() for _ in range(count)]
        columns = [[row[i] for row in rows] for i in range(len(self.schema))]
        return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, self.schema)],
                                    schema=self.schema)
