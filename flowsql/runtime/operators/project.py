"""Project: compute one expression per output field over each batch."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.planner.physical import ProjectExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.batches import make_batch


class ProjectOperator(Operator):
    """Streaming and row-preserving: output batch ``i`` has the rows of input batch ``i``
    (also when the projection has no columns, so COUNT(*) above it still counts)."""

    def __init__(self, node: ProjectExec) -> None:
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        self._exprs = [compile_expr(e, schema) for e in self.node.exprs]

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        arrays = [fn(batch) for fn in self._exprs]
        return (make_batch(arrays, self.node.fields, batch.num_rows),)
