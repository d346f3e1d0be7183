"""Table scan of a ``nexmark`` table: its generated events, narrowed to the scanned columns
and filtered by the pushed-down predicates.

The operator is a ``DatagenSource`` over a ``NexmarkTable`` (event-number chunks dealt to
the subtasks, positions snapshotted and restored as datagen's are). An unbounded nexmark
table (no ``events.num``) runs only in streaming mode.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.expressions import conjoin
from flowsql.planner.physical import TableScanExec
from flowsql.runtime.connectors.datagen import DatagenSource
from flowsql.runtime.connectors.nexmark import NexmarkTable
from flowsql.runtime.expressions import compile_predicate
from flowsql.runtime.kernels.batches import make_batch
from flowsql.runtime.operator import OperatorContext


class NexmarkScanOperator(DatagenSource):
    """See the module docstring."""

    def __init__(self, node: TableScanExec) -> None:
        # DatagenSource reads only rows(), total_rows and rows_per_second of its table
        super().__init__(NexmarkTable(node.table.schema, node.table.options))  # type: ignore[arg-type]
        self.node = node
        names = node.table.schema.names
        self._positions = [names.index(f.name) for f in node.fields]

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        mode = SettingValues(context.settings).string("execution.runtime-mode")
        if self.table.total_rows is None and mode != "streaming":
            raise ExecutionError(f"nexmark table '{self.node.table.name}' is unbounded; set "
                                 "'events.num' to query it in batch mode, or SET "
                                 "'execution.runtime-mode' = 'streaming'")

    def produce(self) -> Iterator[pa.RecordBatch]:
        predicate = conjoin(self.node.filters)
        keep = compile_predicate(predicate, self.node.fields) if predicate is not None else None
        for raw in super().produce():
            batch = make_batch([raw.column(i) for i in self._positions], self.node.fields,
                               raw.num_rows)
            if keep is not None:
                batch = batch.filter(keep(batch))
            if batch.num_rows:
                yield batch
