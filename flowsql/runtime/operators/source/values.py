"""Values: literal rows written in the query (VALUES lists, SELECT without FROM).

In a streaming job the operator saves how many rows it has emitted (list state), so a
restored job does not emit them again.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from flowsql.planner.expressions import Expr
from flowsql.planner.physical import ValuesExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import batch_size, conform, make_batch, table_to_batches
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.contract import Source
from flowsql.runtime.state.store import StateStore

_EMITTED = pa.schema([pa.field("emitted", pa.int64(), nullable=False)])
_ONE_ROW = pa.record_batch([pa.nulls(1)], names=["_"]).select([])


def _value(expr: Expr, dtype: pa.DataType) -> pa.Array:
    """One cell as a one-element array of ``dtype``, evaluated over a one-row batch."""
    return conform(compile_expr(expr, ())(_ONE_ROW), dtype)


class ValuesOperator(Source):
    """The rows are plan constants, so building them row by row is not a hot path."""

    def __init__(self, node: ValuesExec) -> None:
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._store = StateStore.for_context(context)
        self._position = self._store.list_state("position", _EMITTED, "union")
        self._emitted = 0

    def produce(self) -> Iterator[pa.RecordBatch]:
        fields = self.node.fields
        rows = self.node.rows
        columns = [pa.concat_arrays([_value(row[j], f.dtype) for row in rows])
                   if rows else pa.array([], type=f.dtype) for j, f in enumerate(fields)]
        batch = make_batch(columns, fields, len(rows))
        skip = self._emitted
        for part in table_to_batches(pa.Table.from_batches([batch]), fields,
                                     batch_size(self.context.settings)):
            if skip >= part.num_rows:
                skip -= part.num_rows
                continue
            part, skip = part.slice(skip), 0
            # counted before it leaves: a snapshot taken while this generator waits at the
            # yield must count the batch as emitted
            self._emitted += part.num_rows
            yield part

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        self._position.update(pa.table({"emitted": [self._emitted]}, schema=_EMITTED))
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)
        emitted = self._position.rows.column("emitted").to_pylist()
        self._emitted = min(emitted) if emitted else 0
