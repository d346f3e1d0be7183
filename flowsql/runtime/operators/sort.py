"""Sort: ORDER BY over the whole input (blocking), spilling sorted runs to disk when the
memory budget is full (:mod:`flowsql.runtime.spill.external_sort`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

from flowsql.planner.physical import SortExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import batch_size, conform, table_to_batches
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.spill.external_sort import ExternalSorter


class SortOperator(Operator):
    """Hands every input batch with its evaluated sort keys appended to an
    :class:`ExternalSorter` (which holds them against the memory budget and spills sorted
    runs when it is full) and emits the sorted rows in ``execution.batch-size`` chunks
    at end of input, streaming them out of the merge. The sort is stable, so rows equal
    on all keys keep their input order, spilled or not."""

    def __init__(self, node: SortExec) -> None:
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        self._keys = [compile_expr(k.expr, schema) for k in self.node.keys]
        self._width = len(schema)
        self._batch_rows = batch_size(context.settings)
        self._sorter = ExternalSorter(context, self.node.keys, "sort", self._batch_rows)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        keys = [conform(fn(batch), k.expr.dtype) for fn, k in zip(self._keys, self.node.keys)]
        columns = [*batch.columns, *keys]
        names = [f"c{i}" for i in range(len(columns))]
        self._sorter.add(pa.RecordBatch.from_arrays(columns, names=names))
        return ()

    def end_input(self, input: int) -> Iterator[pa.RecordBatch]:
        data = list(range(self._width))
        for table in self._sorter.sorted_tables():
            yield from table_to_batches(table.select(data), self.node.schema, self._batch_rows)

    def close(self) -> None:
        self._sorter.close()
