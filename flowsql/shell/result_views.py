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
    """The rows a changelog describes so far, thread-safe (the query's thread applies
    changes while the view's thread reads).

    Rows keep their place: a row is shown where it was first inserted, and an update
    (``-U`` then ``+U``) puts the new row in the old one's place, so a view of a GROUP BY
    changes its numbers in place instead of moving rows to the bottom.
    """

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self._slots: list[tuple[Any, ...] | None] = []  # None: a removed row's place
        self._where: dict[tuple[Any, ...], int] = {}
        self._counts: Counter[tuple[Any, ...]] = Counter()
        self._freed: int | None = None  # the place the last -U emptied, for its +U
        self._lock = threading.Lock()
        self.changes = 0

    def apply(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Apply changes whose first column is the row kind (``op``)."""
        ops = batch.column(0).to_pylist()
        if batch.num_columns == 1:
            values: list[tuple[Any, ...]] = [()] * batch.num_rows
        else:
            values = list(zip(*(batch.column(i).to_pylist()
                                for i in range(1, batch.num_columns))))
        with self._lock:
            for op, row in zip(ops, values):
                if op in ("+I", "+U"):
                    self._insert(row, reuse=op == "+U")
                else:
                    self._retract(row, update=op == "-U")
            self.changes += len(ops)
            if len(self._slots) > 2 * len(self._where) + 64:
                self._compact()

    def _insert(self, row: tuple[Any, ...], reuse: bool) -> None:
        self._counts[row] += 1
        if row in self._where:
            return
        if reuse and self._freed is not None:
            self._slots[self._freed] = row
            self._where[row] = self._freed
        else:
            self._where[row] = len(self._slots)
            self._slots.append(row)
        self._freed = None

    def _retract(self, row: tuple[Any, ...], update: bool) -> None:
        if self._counts[row] > 1:
            self._counts[row] -= 1
            return
        self._counts.pop(row, None)
        place = self._where.pop(row, None)
        if place is not None:
            self._slots[place] = None
        self._freed = place if update else None

    def _compact(self) -> None:
        self._slots = [row for row in self._slots if row is not None]
        self._where = {row: i for i, row in enumerate(self._slots)}  # type: ignore[misc]
        self._freed = None

    @property
    def row_count(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def table(self) -> pa.Table:
        """The current rows (a row inserted twice and not retracted shows twice)."""
        with self._lock:
            rows = [row for row in self._slots if row is not None
                    for _ in range(self._counts[row])]
        columns = [[row[i] for row in rows] for i in range(len(self.schema))]
        return pa.Table.from_arrays([pa.array(c, f.type) for c, f in zip(columns, self.schema)],
                                    schema=self.schema)
