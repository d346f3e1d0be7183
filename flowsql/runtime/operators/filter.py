"""Filter: keep the rows whose predicate is TRUE (NULL counts as false)."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.planner.physical import FilterExec
from flowsql.runtime.expressions import compile_predicate
from flowsql.runtime.operator import Operator, OperatorContext


class FilterOperator(Operator):
    """Streaming; emits each input batch filtered (empty results are dropped)."""

    def __init__(self, node: FilterExec) -> None:
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._predicate = compile_predicate(self.node.predicate, self.node.input.schema)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        kept = batch.filter(self._predicate(batch))
        return (kept,) if kept.num_rows else ()
