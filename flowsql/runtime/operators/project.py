"""Project: compute one expression per output field over each batch.

Row kinds of an updating stream (``runtime.changelog``) pass through: they are data of
the row, not of any expression.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.planner.physical import ProjectExec
from flowsql.runtime.changelog import is_updating, with_row_kinds
from flowsql.runtime.expressions import compile_exprs
from flowsql.runtime.kernels.batches import make_batch
from flowsql.runtime.operator import Operator, OperatorContext


class ProjectOperator(Operator):
    """Streaming and row-preserving: output batch ``i`` has the rows of input batch ``i``
    (also when the projection has no columns, so COUNT(*) above it still counts)."""

    def __init__(self, node: ProjectExec) -> None:
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        # compiled together: a sub-expression the outputs repeat is computed once per batch
        self._evaluate = compile_exprs(self.node.exprs, schema)
        self._width = len(schema)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        arrays = self._evaluate(batch)
        out = make_batch(arrays, self.node.fields, batch.num_rows)
        if is_updating(batch, self._width):
            out = with_row_kinds(out, batch.column(self._width))
        return (out,)
