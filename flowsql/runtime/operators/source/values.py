"""Values: literal rows written in the query (VALUES lists, SELECT without FROM)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from flowsql.planner.expressions import Expr
from flowsql.planner.physical import ValuesExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import batch_size, conform, make_batch, table_to_batches
from flowsql.runtime.operators.contract import Source

_ONE_ROW = pa.record_batch([pa.nulls(1)], names=["_"]).select([])


def _value(expr: Expr, dtype: pa.DataType) -> pa.Array:
    """One cell as a one-element array of ``dtype``, evaluated over a one-row batch."""
    return conform(compile_expr(expr, ())(_ONE_ROW), dtype)


class ValuesOperator(Source):
    """The rows are plan constants, so building them row by row is not a hot path."""

    def __init__(self, node: ValuesExec) -> None:
        self.node = node

    def produce(self) -> Iterator[pa.RecordBatch]:
        fields = self.node.fields
        rows = self.node.rows
        columns = [pa.concat_arrays([_value(row[j], f.dtype) for row in rows])
                   if rows else pa.array([], type=f.dtype) for j, f in enumerate(fields)]
        batch = make_batch(columns, fields, len(rows))
        yield from table_to_batches(pa.Table.from_batches([batch]), fields,
                                    batch_size(self.context.settings))
