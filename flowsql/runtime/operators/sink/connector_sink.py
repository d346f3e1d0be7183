"""Sink: writes its input into a table's connector (``INSERT INTO``); emits nothing.

Input batches carry the input plan's columns, plus the trailing ``$row_kind`` column when
the input is updating (checked per batch, see ``flowsql.runtime.changelog``). The columns
are matched to the table's columns by position -- the planner has checked that the query's
columns fit the table -- and take the table's names and types before the connector sees
them. Rows written are counted in ``context.metrics['records_written']``.

Call order follows the operator contract: the sink is created in ``open``, every batch is
handed to it, ``end_input`` lets it make its output visible (close the current file),
``close`` releases it (also after a failure or a cancel). The checkpoint hooks
(``restore_state`` right after ``open``, ``snapshot_state``, ``notify_checkpoint_complete``)
are forwarded to the sink unchanged: the operator's state is exactly the sink's, which is
what lets an exactly-once sink commit in two phases (see ``flowsql.runtime.connectors.sinks``).
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.physical_streaming import SinkExec
from flowsql.runtime.changelog import data_columns, is_updating, row_kinds
from flowsql.runtime.connectors.filesystem import normalized_schema
from flowsql.runtime.connectors.sinks import TableSink, open_sink
from flowsql.runtime.operator import Operator, OperatorContext

RECORDS_WRITTEN = "records_written"


class SinkOperator(Operator):
    def __init__(self, node: SinkExec) -> None:
        self.node = node
        self.width = len(node.input.schema)
        self.schema = normalized_schema(node.table.writable_schema)
        if self.width != len(self.schema):
            raise ExecutionError(f"table '{node.table.name}' has {len(self.schema)} columns, "
                                 f"the query writes {self.width}")
        self._sink: TableSink | None = None

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        context.metrics.setdefault(RECORDS_WRITTEN, 0)
        self._sink = open_sink(self.node.table, context)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        sink = self._opened()
        kinds = row_kinds(batch, self.width) if is_updating(batch, self.width) else None
        sink.write(self._as_table_rows(data_columns(batch, self.width)), kinds)
        self.context.metrics[RECORDS_WRITTEN] += batch.num_rows
        return ()

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        return self._opened().snapshot_state(checkpoint_id)

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._opened().restore_state(state)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        # a notification that arrives after close changes nothing: a finished sink has
        # committed everything, and a failed one's pending files are committed by a restore
        if self._sink is not None:
            self._sink.notify_checkpoint_complete(checkpoint_id)

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        if self._sink is not None:
            self._sink.finish()
        return ()

    def close(self) -> None:
        if self._sink is not None:
            sink, self._sink = self._sink, None
            sink.close()

    def _opened(self) -> TableSink:
        if self._sink is None:
            raise ExecutionError("sink used before open() or after close()")
        return self._sink

    def _as_table_rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        arrays = [column if column.type.equals(f.type) else pc.cast(column, f.type)
                  for column, f in zip(batch.columns, self.schema)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)
