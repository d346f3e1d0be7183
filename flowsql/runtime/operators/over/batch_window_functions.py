"""Window: append one column per window function call to every input row (blocking).

A user-defined aggregate over a window runs once per distinct frame
(``runtime.user_functions.frames``). At end of input, the calls are grouped by their window (partition keys and order keys);
per window the rows are sorted once by (partition, order), the partition and peer
layout is computed once, every call of that window is evaluated over the sorted rows
(:mod:`window_functions`), and the results are put back in input order. Output rows keep
the input order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Expr, SortKey, WindowCall
from flowsql.planner.physical import WindowExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    conform,
    table_to_batches,
    to_table,
)
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.kernels.ordering import sort_indices
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.over import window_functions as W
from flowsql.runtime.operators.over.window_frames import Layout, default_frame, frame_bounds
from flowsql.runtime.user_functions.frames import call_per_frame

_RANKING = {"row_number": W.row_number, "rank": W.rank, "dense_rank": W.dense_rank,
            "percent_rank": W.percent_rank, "cume_dist": W.cume_dist}
_AGGREGATES = ("sum", "count", "count_star", "avg", "min", "max")
_VALUES = ("first_value", "last_value", "nth_value")


class WindowOperator(Operator):
    """Holds the whole input (accounted against the memory budget)."""

    def __init__(self, node: WindowExec) -> None:
        self.node = node
        for call in node.calls:
            if call.function is not None:  # a user-defined aggregate (user_functions.frames)
                continue
            if call.name not in (*_RANKING, *_AGGREGATES, *_VALUES, "ntile", "lag", "lead"):
                raise ExecutionError(f"window function {call.name} is not supported")
            if call.distinct:
                raise ExecutionError(f"{call.name}(DISTINCT ...) OVER is not supported")

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._batches: list[pa.RecordBatch] = []
        self._memory = HeldMemory(context)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        self._batches.append(batch)
        self._memory.hold(batch_nbytes(batch))
        return ()

    def close(self) -> None:
        self._memory.release_all()

    def _evaluate(self, expr: Expr) -> pa.Array:
        """An expression over the whole held input, as one array."""
        fn: Callable[[pa.RecordBatch], pa.Array] = compile_expr(expr, self.node.input.schema)
        parts = [fn(b) for b in self._batches]
        return conform(pa.chunked_array(parts, type=expr.dtype), expr.dtype)

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        if not self._batches:
            return ()
        n = sum(b.num_rows for b in self._batches)
        windows: dict[tuple[tuple[Expr, ...], tuple[SortKey, ...]], list[int]] = {}
        for i, call in enumerate(self.node.calls):
            windows.setdefault((call.partition_by, call.order_by), []).append(i)
        results: list[pa.Array | None] = [None] * len(self.node.calls)
        for (partition_by, order_by), members in windows.items():
            partition = [self._evaluate(e) for e in partition_by]
            order = [self._evaluate(k.expr) for k in order_by]
            specs = [SortKey(e) for e in partition_by] + list(order_by)
            perm = sort_indices([*partition, *order], specs, n)
            layout = Layout.of([p.take(perm) for p in partition],
                               [o.take(perm) for o in order], n)
            sorted_order = [o.take(perm) for o in order]
            inverse = np.empty(n, dtype=np.int64)
            inverse[np.asarray(perm.to_numpy(zero_copy_only=False))] = np.arange(n)
            back = pa.array(inverse)
            for i in members:
                call = self.node.calls[i]
                value = self._call(call, layout, perm, sorted_order)
                results[i] = conform(value, self.node.fields[i].dtype).take(back)
        table = to_table(self._batches, len(self.node.input.schema))
        columns = [*table.columns, *results]
        self._batches = []
        self._memory.release_all()
        out = pa.table(columns, names=[f"c{i}" for i in range(len(columns))])
        return table_to_batches(out, self.node.schema, batch_size(self.context.settings))

    def _argument(self, call: WindowCall, index: int, perm: pa.Array) -> pa.Array:
        return self._evaluate(call.args[index]).take(perm)

    def _call(self, call: WindowCall, layout: Layout, perm: pa.Array,
              order: list[pa.Array]) -> pa.Array:
        name = call.name
        if name in _RANKING:
            return pa.array(_RANKING[name](layout))
        if name == "ntile":
            buckets = self._argument(call, 0, perm).to_numpy(zero_copy_only=False)
            return pa.array(W.ntile(layout, np.asarray(buckets, dtype=np.int64)))
        if name in ("lag", "lead"):
            values = self._argument(call, 0, perm)
            offsets = (np.asarray(self._argument(call, 1, perm).to_numpy(zero_copy_only=False),
                                  dtype=np.int64) if len(call.args) > 1
                       else np.ones(layout.n, dtype=np.int64))
            default = (self._argument(call, 2, perm) if len(call.args) > 2
                       else pa.nulls(layout.n, values.type))
            return W.shifted(layout, values, -offsets if name == "lag" else offsets, default)
        frame = call.frame or default_frame(bool(call.order_by))
        start, end = frame_bounds(frame, layout, call.order_by, order)
        if call.function is not None:
            partition = [self._evaluate(e).take(perm) for e in call.partition_by]
            return call_per_frame(call.function, [self._argument(call, j, perm)
                                                  for j in range(len(call.args))],
                                  start, end, _describe_partition(call, partition))
        if name == "count_star" or (name == "count" and not call.args):
            return pa.array(W.frame_count(None, start, end))
        values = self._argument(call, 0, perm)
        if name == "count":
            return pa.array(W.frame_count(values, start, end))
        if name == "sum":
            return W.frame_sum(values, start, end)
        if name == "avg":
            return W.frame_avg(values, start, end)
        if name in ("min", "max"):
            return W.frame_extreme(values, start, end, frame, layout, name == "max")
        if name == "last_value":
            return W.nth_in_frame(values, start, end, None, from_end=True)
        nth = (np.asarray(self._argument(call, 1, perm).to_numpy(zero_copy_only=False),
                          dtype=np.int64) if name == "nth_value"
               else np.ones(layout.n, dtype=np.int64))
        return W.nth_in_frame(values, start, end, nth)


def _describe_partition(call: WindowCall, partition: list[pa.Array]) -> Callable[[int], str]:
    """Names the window partition of a sorted row, for errors."""
    def describe(row: int) -> str:
        if not partition:
            return "the whole input"
        from flowsql.planner.expressions import render
        values = ", ".join(f"{render(e)} = {p[row].as_py()!r}"
                           for e, p in zip(call.partition_by, partition))
        return f"the partition ({values})"
    return describe
