"""Table scan of a ``datagen`` table: the generated rows, narrowed to the scanned columns
and filtered by the pushed-down predicates (the generator itself knows neither).

An unbounded datagen table (neither ``number-of-rows`` nor sequence fields) runs only in
streaming mode: a batch query over it would never finish.

The operator is the connector's :class:`DatagenSource` (not a wrapper around one), so its
position -- the only state -- is saved and restored by the operator's own
``snapshot_state`` / ``restore_state``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.expressions import conjoin
from flowsql.planner.physical import TableScanExec
from flowsql.runtime.connectors.datagen import DatagenSource, DatagenTable
from flowsql.runtime.expressions import compile_predicate
from flowsql.runtime.kernels.batches import make_batch
from flowsql.runtime.operator import OperatorContext


class DatagenScanOperator(DatagenSource):
    """See the module docstring. Subclasses over another generator (``nexmark``) change
    only :meth:`generator_table`, ``connector`` and ``bounded_by``."""

    #: the connector's name, as the unbounded-table error says it
    connector = "datagen"
    #: what makes the table bounded, as the unbounded-table error says it
    bounded_by = "'number-of-rows' (or sequence fields)"

    def __init__(self, node: TableScanExec) -> None:
        super().__init__(self.generator_table(node))
        self.node = node
        names = node.table.schema.names
        self._positions = [names.index(f.name) for f in node.fields]

    @staticmethod
    def generator_table(node: TableScanExec) -> DatagenTable:
        """The generator the source deals chunks of (it reads only ``rows()``,
        ``total_rows`` and ``rows_per_second``)."""
        return DatagenTable(node.table.schema, node.table.options)

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        mode = SettingValues(context.settings).string("execution.runtime-mode")
        if self.table.total_rows is None and mode != "streaming":
            raise ExecutionError(f"{self.connector} table '{self.node.table.name}' is "
                                 f"unbounded; set {self.bounded_by} to query it in batch "
                                 "mode, or SET 'execution.runtime-mode' = 'streaming'")

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
