"""The operator of a ``WindowAggregateExec``: a window TVF followed by GROUP BY keys,
window_start, window_end.

The windowing itself (:class:`PositionalWindowAggregate`) works on input column positions;
this operator evaluates the plan's expressions (rowtime, group keys, aggregate arguments)
into one narrow batch per input batch, adds each record's arrival watermark when the plan
asks for event-time watermarks, and puts the windowing's output (keys, window_start,
window_end, aggregates) into the plan's column order and types.

Watermarks are generated here, from the rowtime in input order, with
:class:`BoundedOutOfOrderness` -- equivalent to generating them at the scan because the
planner only places this node directly over the scan of the table that declares the
WATERMARK (window TVFs take ``TABLE t``), and everything between keeps row order.
Records whose rowtime is NULL are dropped (as in Flink) before they count for watermarks;
records failing the plan's ``predicate`` are dropped after.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.errors import PlanError
from flowsql.planner.physical import WINDOW_END, WINDOW_START, WindowAggregateExec
from flowsql.runtime.expressions import compile_expr, compile_predicate
from flowsql.runtime.kernels.batches import make_batch
from flowsql.runtime.kernels.epoch_millis import epoch_millis
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.window.accumulators import ACCUMULATED_AGGREGATES
from flowsql.runtime.operators.window.positional_window_aggregate import PositionalWindowAggregate
from flowsql.runtime.operators.window.window_specs import (
    AggregateSpec,
    WindowAggregateSpec,
    window_spec,
)
from flowsql.runtime.time.watermarks import BoundedOutOfOrderness

#: aggregate calls the window aggregate computes
SUPPORTED_AGGREGATES = ACCUMULATED_AGGREGATES


class WindowAggregateOperator(Operator):
    """See the module docstring."""

    def __init__(self, node: WindowAggregateExec) -> None:
        self.node = node
        unsupported = [a.name for a in node.aggs
                       if a.name not in SUPPORTED_AGGREGATES or a.filter is not None]
        if unsupported:
            raise PlanError(f"window aggregate cannot compute {', '.join(unsupported)}")
        self._arguments = [a.args[0] for a in node.aggs if a.name != "count_star"]
        self._narrow = self._narrow_schema()
        self._watermarked = node.watermark_delay_ms is not None
        aggregates, position = [], 1 + len(node.keys)
        for index, agg in enumerate(node.aggs):
            column = None if agg.name == "count_star" else position
            position += column is not None
            aggregates.append(AggregateSpec(agg.name, column, f"a{index}", agg.distinct))
        self._inner = PositionalWindowAggregate(WindowAggregateSpec(
            self._narrow, 0, window_spec(node.shape), tuple(range(1, 1 + len(node.keys))),
            tuple(aggregates), watermark_column=position if self._watermarked else None))

    def _narrow_schema(self) -> pa.Schema:
        """rowtime, k<i> per key, x<i> per aggregate argument [, watermark]."""
        fields = [pa.field("rowtime", pa.timestamp("ms"))]
        fields += [pa.field(f"k{i}", k.dtype) for i, k in enumerate(self.node.keys)]
        fields += [pa.field(f"x{i}", e.dtype) for i, e in enumerate(self._arguments)]
        if self.node.watermark_delay_ms is not None:
            fields.append(pa.field("watermark", pa.int64()))
        return pa.schema(fields)

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        self._time = compile_expr(self.node.time_column, schema)
        self._keep = (compile_predicate(self.node.predicate, schema)
                      if self.node.predicate is not None else None)
        self._keys = [compile_expr(k, schema) for k in self.node.keys]
        self._args = [compile_expr(a, schema) for a in self._arguments]
        self._watermarks = (BoundedOutOfOrderness(self.node.watermark_delay_ms,
                                                  self.node.watermark_interval_ms)
                            if self.node.watermark_delay_ms is not None else None)
        self._inner.open(context)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        time = self._time(batch)
        if time.null_count:
            valid = time.is_valid()
            batch, time = batch.filter(valid), time.filter(valid)
        if not batch.num_rows:
            return []
        ts = epoch_millis(time, "window aggregate")
        columns = [pa.array(ts, pa.int64()).cast(pa.timestamp("ms"))]
        columns += [fn(batch) for fn in self._keys] + [fn(batch) for fn in self._args]
        emit: int | None = None
        if self._watermarks is not None:
            marks = self._watermarks.on_batch(ts)
            columns.append(pa.array(marks.row_watermarks, pa.int64()))
            emit = marks.emit
        narrow = pa.RecordBatch.from_arrays(columns, schema=self._narrow)
        if self._keep is not None:
            narrow = narrow.filter(self._keep(batch))
        out = list(self._inner.process_batch(0, narrow))
        if emit is not None:
            out.extend(self._inner.process_watermark(emit))
        return [self._reshape(b) for b in out]

    def process_watermark(self, watermark: int) -> Iterable[pa.RecordBatch]:
        """Watermarks from upstream (streaming plans generate them at the source)."""
        return [self._reshape(b) for b in self._inner.process_watermark(watermark)]

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        return [self._reshape(b) for b in self._inner.end_input(0)]

    def close(self) -> None:
        self._inner.close()

    def _reshape(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Operator output (keys, window_start, window_end, aggregates) -> plan order."""
        n_keys = len(self.node.keys)
        source = {WINDOW_START: n_keys, WINDOW_END: n_keys + 1}
        columns = [batch.column(source[s] if isinstance(s, str) else s)
                   for s in self.node.group_slots]
        columns += [batch.column(n_keys + 2 + i) for i in range(len(self.node.aggs))]
        return make_batch(columns, self.node.schema, batch.num_rows)
