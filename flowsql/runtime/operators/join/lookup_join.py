"""Flink's processing-time lookup join (``JOIN t FOR SYSTEM_TIME AS OF l.proctime``) into a
bounded table: the table indexed once, every probe batch joined against it as it arrives.

The looked-up table is not an input of the dataflow. When the operator opens it runs the
table's bounded plan (``LookupJoinExec.table``) to the end on this subtask -- every subtask
holds the whole table, so the probe stream stays where it is -- and indexes its key
columns once (:class:`KeyIndex`, through :class:`BuildProbeJoin` with the right side as the
build side). Each probe batch is then joined in one vectorized step and its output emitted
at once; a left join pads a probe row without a partner with NULLs at once, as Flink's does.

What this gives, as in Flink:

* a probe row sees the table's content at the time it is looked up; as the table is
  bounded and read before the first probe, that is its whole content;
* the probe side keeps nothing: its rows are forgotten once joined, so the state is the
  table alone, whatever the stream's length (``state_rows`` / ``state_bytes`` report it);
* the output is insert-only: nothing ever retracts an earlier result.

Checkpoints: the table is not written into them. A restored run opens the operator again,
which reads the table again -- the content a lookup at that processing time would see,
which is Flink's lookup semantics -- so a checkpoint of this operator is empty and its
size does not grow with the table.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.planner.physical_streaming import LookupJoinExec
from flowsql.runtime.executor import execute_batches
from flowsql.runtime.expressions import compile_expr, compile_predicate
from flowsql.runtime.kernels.batches import (
    batch_size,
    conform,
    empty_batch,
    positional,
    table_to_batches,
    to_table,
)
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.join.build_probe import BuildProbeJoin, JoinSpec
from flowsql.runtime.operators.join.hash_join import _key_type
from flowsql.runtime.state.store import add_to_gauge

#: the looked-up table's plan runs on one subtask of this operator (no workers of its own)
_TABLE_SETTINGS = {"parallelism.default": "1", "execution.runtime-mode": "batch"}


class LookupJoinOperator(Operator):
    """See the module docstring. Input 0 is the probe stream."""

    def __init__(self, node: LookupJoinExec) -> None:
        if node.kind not in ("inner", "left"):
            raise ValueError(f"a lookup join is inner or left, not {node.kind}")
        self.node = node
        self._reserved = 0

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        node = self.node
        self._probe_keys = [compile_expr(k, node.input.schema) for k in node.left_keys]
        table_keys = [compile_expr(k, node.table.schema) for k in node.right_keys]
        self._key_types = [_key_type(lk.dtype, rk.dtype)
                           for lk, rk in zip(node.left_keys, node.right_keys)]
        pair_schema = (*node.input.schema, *node.table.schema)
        residual = (compile_predicate(node.residual, pair_schema)
                    if node.residual is not None else None)
        spec = JoinSpec(node.kind, "right", node.input.schema, node.table.schema, residual,
                        False, len(node.left_keys))
        batches = list(execute_batches(node.table, {**context.settings, **_TABLE_SETTINGS}))
        schema = node.table.schema
        table = to_table(batches or [empty_batch(schema)], len(schema)).combine_chunks()
        keys = [pa.concat_arrays([conform(fn(b), t) for b in batches]) if batches
                else pa.array([], t) for fn, t in zip(table_keys, self._key_types)]
        self._joined = BuildProbeJoin(spec, positional(table.columns, table.num_rows), keys)
        rows = table.num_rows
        held = table.nbytes + sum(k.nbytes for k in keys) + self._joined.nbytes
        context.memory.reserve(held, context.name)
        self._reserved = held
        add_to_gauge(context.gauges, "state_rows", lambda: rows)
        add_to_gauge(context.gauges, "state_bytes", lambda: held)
        self._batch_size = batch_size(context.settings)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        keys = [conform(fn(batch), t) for fn, t in zip(self._probe_keys, self._key_types)]
        out = self._joined.probe(positional(batch.columns, batch.num_rows), keys)
        if out is None or not out.num_rows:
            return ()
        return table_to_batches(out, self.node.schema, self._batch_size)

    def close(self) -> None:
        if self._reserved:
            self.context.memory.release(self._reserved)
            self._reserved = 0
