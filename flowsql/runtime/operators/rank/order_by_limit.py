"""Top-N: ORDER BY ... LIMIT n OFFSET m keeping only n + m rows while consuming; it never
spills: what it holds is bounded by the limit, and accounted against the memory budget."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.planner.physical import TopNExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import batch_size, table_to_batches, take_rows
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.kernels.ordering import top_indices
from flowsql.runtime.operator import Operator, OperatorContext

# Buffered rows may grow to this multiple of n + m before they are cut back to n + m:
# each cut is a sort, so cutting on every batch would sort far more often than needed.
_SLACK = 4


class TopNOperator(Operator):
    """Buffers candidate rows together with their sort keys (key columns appended after
    the data columns) and cuts the buffer back to the best ``limit + offset`` rows
    whenever it grows past ``_SLACK`` times that (or one batch), or sooner when the memory
    budget has no room for the buffer. The buffer is held against the budget; only when
    the best ``limit + offset`` rows alone exceed it does the operator fail
    (ResourceExhausted): sorting to disk would not help, those rows are the result."""

    def __init__(self, node: TopNExec) -> None:
        self.node = node
        self._keep = node.limit + node.offset

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        self._keys = [compile_expr(k.expr, schema) for k in self.node.keys]
        self._width = len(schema)
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        self._memory = HeldMemory(context)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if self._keep == 0:
            return ()
        columns = [*batch.columns, *(fn(batch) for fn in self._keys)]
        names = [f"c{i}" for i in range(len(columns))]
        table = (pa.Table.from_arrays(columns, names=names) if columns
                 else pa.Table.from_batches([batch]))
        self._buffer.append(table)
        self._buffered += batch.num_rows
        if (self._buffered > _SLACK * max(self._keep, batch.num_rows)
                or not self._memory.try_hold(table.nbytes)):
            self._cut()
        return ()

    def _cut(self) -> None:
        table = pa.concat_tables(self._buffer)
        keys = table.columns[self._width:]
        order = top_indices(keys, self.node.keys, table.num_rows, self._keep)
        self._buffer = [take_rows(table, order)]
        self._buffered = self._buffer[0].num_rows
        self._memory.release_all()
        self._memory.hold(self._buffer[0].nbytes)

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        if not self._buffer:
            return ()
        self._cut()
        table = self._buffer[0].slice(self.node.offset, self.node.limit)
        table = table.select(list(range(self._width)))
        self._buffer = []
        self._memory.release_all()
        return table_to_batches(table, self.node.schema, batch_size(self.context.settings))

    def close(self) -> None:
        self._memory.release_all()
