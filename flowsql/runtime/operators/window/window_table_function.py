"""Window TVF without an aggregate: every row once per window it belongs to, with
window_start, window_end and window_time (``window_end - 1 ms``) appended.

Stateless and vectorized: windows are assigned with numpy (``window_assignment``) and the
rows are repeated with one ``take``. Fixed windows only (TUMBLE, HOP, CUMULATE): a
SESSION window depends on later rows, so the planner admits it only under an aggregate.
Rows whose event time is NULL are dropped (as in Flink).
Rows are not checked for lateness: Flink's window TVF operator does not drop late rows
either; the aggregate above it does.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.planner.physical import WindowTableFunctionExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import make_batch
from flowsql.runtime.kernels.epoch_millis import epoch_millis
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.window.window_assignment import assign_windows
from flowsql.runtime.operators.window.window_specs import window_spec


class WindowTableFunctionOperator(Operator):
    def __init__(self, node: WindowTableFunctionExec) -> None:
        self.node = node
        self.spec = window_spec(node.shape)

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._time = compile_expr(self.node.time_column, self.node.input.schema)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        time = self._time(batch)
        if time.null_count:  # Flink drops rows without an event time
            batch, time = batch.filter(time.is_valid()), time.filter(time.is_valid())
        ts = epoch_millis(time, "window table function")
        rows, starts, ends = assign_windows(self.spec, ts)
        indices = pa.array(rows)
        columns = [c.take(indices) for c in batch.columns]
        bounds = [pa.array(v, pa.int64()).cast(pa.timestamp("ms"))
                  for v in (starts, ends, ends - 1)]
        return (make_batch(columns + bounds, self.node.schema, len(rows)),)
