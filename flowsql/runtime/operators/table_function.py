"""LATERAL TABLE(f(args)): each input row joined with the rows a table function returns.

The function runs once per input batch on the argument arrays (the contract is in
``runtime/user_functions/table.py``). Stateless: nothing survives a batch, so the operator
checkpoints nothing and runs at any parallelism. Row kinds of an updating input follow
their input row to every output row it produces (a retraction of the input row retracts
exactly the rows its insertion produced, since the function is deterministic per row).
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.planner.expressions import render
from flowsql.planner.physical import TableFunctionExec
from flowsql.runtime.changelog import is_updating, with_row_kinds
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import make_batch
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.user_functions.table import (
    call_table_function,
    lateral_rows,
    load_callable,
)


class TableFunctionOperator(Operator):
    """Streaming; output batch ``i`` holds the rows derived from input batch ``i`` (none
    when no row produced anything), input rows in order of the function's output."""

    def __init__(self, node: TableFunctionExec) -> None:
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        self._args = [compile_expr(e, schema) for e in self.node.args]
        self._width = len(schema)
        self._fn = load_callable(self.node.function)
        self._labels = [render(a) for a in self.node.args]

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if batch.num_rows == 0:
            return ()
        node = self.node
        args = [fn(batch) for fn in self._args]
        arrays, parents = call_table_function(self._fn, node.function, args, node.fields,
                                              batch.num_rows, self._labels)
        joined, rows = lateral_rows(batch, arrays, parents, node.outer)
        if not joined.num_rows:
            return ()
        updating = is_updating(batch, self._width)
        data = [joined.column(i) for i in range(self._width)]
        functions = [joined.column(batch.num_columns + i) for i in range(len(arrays))]
        out = make_batch([*data, *functions], node.schema, joined.num_rows)
        if updating:
            out = with_row_kinds(out, joined.column(self._width))
        return (out,)
