"""Sort: ORDER BY over the whole input (blocking)."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.planner.physical import SortExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    table_to_batches,
    take_rows,
    to_table,
)
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.kernels.ordering import sort_indices
from flowsql.runtime.operator import Operator, OperatorContext


class SortOperator(Operator):
    """Holds every input batch with its evaluated sort keys (accounted against the memory
    budget), sorts once at end of input and emits in ``execution.batch-size`` chunks.
    The sort is stable, so rows equal on all keys keep their input order."""

    def __init__(self, node: SortExec) -> None:
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        self._keys = [compile_expr(k.expr, schema) for k in self.node.keys]
        self._batches: list[pa.RecordBatch] = []
        self._key_values: list[list[pa.Array]] = [[] for _ in self.node.keys]
        self._memory = HeldMemory(context)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        self._batches.append(batch)
        size = batch_nbytes(batch)
        for values, fn in zip(self._key_values, self._keys):
            key = fn(batch)
            values.append(key)
            size += key.nbytes
        self._memory.hold(size)
        return ()

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        schema = self.node.schema
        table = to_table(self._batches, len(schema)) if self._batches else None
        if table is None:
            return ()
        keys = [pa.chunked_array(v, type=v[0].type) for v in self._key_values]
        order = sort_indices(keys, self.node.keys, table.num_rows)
        self._batches, self._key_values = [], []
        return table_to_batches(take_rows(table.combine_chunks(), order), schema,
                                batch_size(self.context.settings))

    def close(self) -> None:
        self._memory.release_all()
