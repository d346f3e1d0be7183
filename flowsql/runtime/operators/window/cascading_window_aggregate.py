"""Windowed aggregate: GROUP BY keys, window_start, window_end over a stream whose rows
already carry their window -- Flink's cascading window aggregation, and window
aggregation after a window join or a window Top-N.

Contract. The input is insert-only (an updating batch is an error); each row names its
window by the plan's ``window`` columns (window_start, window_end), which are among the
group expressions. A group is (keys, window_start, window_end); its window *fires* when
the watermark reaches ``window_end - 1`` -- the moment the window operator upstream emits
that window's rows, before forwarding the watermark, so those rows are never late here.
Firing emits one insert-only row per group of the window (group fields, then the
aggregates) and drops the group's state: nothing emitted is ever retracted, and the
output's window_start/window_end are window bounds again, so it can cascade once more.

Late rows. A row whose window already fired (``window_end - 1 <= watermark`` on arrival)
is dropped and counted in the metric ``late_records_dropped``: its window's row is out.
End of input fires every window.

Order. Per firing, windows ascending by ``window_end``, groups within a window ascending by
the group fields (NULLs last).

Aggregates: COUNT, COUNT(*), SUM, MIN, MAX, AVG, each also DISTINCT (COUNT, SUM and AVG
then keep value sets), as mergeable accumulators (``window.accumulators``); results are
cast to the plan's types.

State (one ``StateStore``): the keyed table ``groups`` holds partial accumulators per
(keys, window) -- key columns ``k<i>``, the window end in epoch milliseconds and the
accumulator columns, owned by the key group of the group fields (the columns the plan
hashes the input on). Each batch is pre-aggregated once per (keys, window) and its
partials are appended, so a group may have several rows until they are merged: when its
window fires, or when the unmerged rows outnumber the merged ones (a compaction of the
whole table, amortized constant work per row). One timer per (key group, window end) in
the timer service ``windows``: namespace the key group, timestamp ``window_end - 1``, so
a rescaled restore keeps exactly the timers of the rows it keeps; a watermark that fires
no timer touches no state. The watermark goes to union list state on snapshot
(``EventTimeProgress``, restored as the minimum).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.physical_streaming import WindowedAggregateExec
from flowsql.runtime.changelog import is_updating
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import batch_size, conform, make_batch
from flowsql.runtime.kernels.epoch_millis import epoch_millis
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.watermark.event_time_operator import EventTimeOperator
from flowsql.runtime.operators.window.accumulators import Accumulators
from flowsql.runtime.operators.window.window_specs import (
    AGGREGATE_FUNCTIONS,
    aggregate_arguments,
    aggregate_specs,
)
from flowsql.runtime.state.keyed_table import KEY_GROUP

LATE_RECORDS_DROPPED = "late_records_dropped"
WINDOW_END = "$window_end"
#: a compaction never runs while the table holds fewer unmerged rows than this
_MIN_COMPACTION = 4096


class WindowedAggregateOperator(EventTimeOperator):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    def __init__(self, node: WindowedAggregateExec) -> None:
        unsupported = sorted({a.name for a in node.aggs
                              if (a.name not in AGGREGATE_FUNCTIONS and a.function is None)
                              or a.filter is not None})
        if unsupported:
            raise ExecutionError(f"windowed aggregate cannot compute {', '.join(unsupported)}")
        self.node = node
        self._width = len(node.input.schema)
        self._keys = [f"k{i}" for i in range(len(node.group_exprs))]
        self._arguments = aggregate_arguments(node.aggs)
        argument_schema = pa.schema([pa.field(f"x{i}", _computable(e.dtype))
                                     for i, e in enumerate(self._arguments)])
        specs = aggregate_specs(node.aggs, 0)
        self._argument_schema = argument_schema
        self._accumulators = Accumulators(specs, argument_schema)
        self._state_schema = pa.schema(
            [pa.field(k, _computable(f.dtype)) for k, f in zip(self._keys, node.group_fields)]
            + [pa.field(WINDOW_END, pa.int64(), nullable=False)] + self._accumulators.fields)

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        context.metrics.setdefault(LATE_RECORDS_DROPPED, 0)
        schema = self.node.input.schema
        self._key_fns = [compile_expr(e, schema) for e in self.node.group_exprs]
        self._argument_fns: list[Callable[[pa.RecordBatch], pa.Array]] = [
            compile_expr(e, schema) for e in self._arguments]
        self._end = compile_expr(self.node.window[1], schema)
        self._batch_size = batch_size(context.settings)
        self._start_event_time(context)
        self._groups = self._store.keyed_table("groups", self._state_schema)
        self._timers = self._store.timers("windows")
        # rows of ``groups`` right after its last merge: a cost heuristic, not state
        self._merged_rows = 0

    # -- data ---------------------------------------------------------------------------

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if not batch.num_rows:
            return []
        if is_updating(batch, self._width):
            raise ExecutionError("windowed aggregate: the input must be insert-only, but a "
                                 "batch carries row kinds")
        ends = epoch_millis(self._end(batch), "windowed aggregate (window_end)")
        on_time = ends - 1 > self._watermark
        kept = int(np.count_nonzero(on_time))
        if kept < batch.num_rows:
            self.context.metrics[LATE_RECORDS_DROPPED] += batch.num_rows - kept
        if not kept:
            return []
        keys = [conform(fn(batch), f.type) for fn, f in zip(self._key_fns, self._state_schema)]
        arguments = self._accumulators.arguments(pa.RecordBatch.from_arrays(
            [conform(fn(batch), f.type)
             for fn, f in zip(self._argument_fns, self._argument_schema)],
            schema=self._argument_schema))
        rows = pa.Table.from_arrays([*keys, pa.array(ends, pa.int64()), *arguments.values()],
                                    names=[*self._keys, WINDOW_END, *arguments])
        if kept < batch.num_rows:
            rows = rows.filter(pa.array(on_time))
        self._add(self._accumulators.partial(rows, [*self._keys, WINDOW_END]))
        return []

    def _add(self, partial: pa.Table) -> None:
        """Append per-(keys, window) partials with their key groups, make sure each
        (key group, window) has a timer, and compact when unmerged rows dominate."""
        groups = self._groups.key_groups_of([partial.column(k) for k in self._keys],
                                            partial.num_rows)
        partial = partial.add_column(0, KEY_GROUP, pa.array(groups, pa.int32()))
        stored = self._groups.rows
        self._groups.replace(pa.concat_tables(
            [stored, partial.select(stored.column_names).cast(stored.schema)]))
        ends = partial.column(WINDOW_END).to_numpy()
        pairs = np.unique(np.stack([groups.astype(np.int64), ends]), axis=1)
        self._timers.register(pairs[0], pairs[0], pairs[1] - 1)
        if len(self._groups) > 2 * self._merged_rows + _MIN_COMPACTION:
            self._groups.replace(self._merge(self._groups.rows))
            self._merged_rows = len(self._groups)

    def _merge(self, rows: pa.Table) -> pa.Table:
        """One row per (keys, window) of ``rows`` (columns of the ``groups`` table)."""
        merged = self._accumulators.merge(rows, [KEY_GROUP, *self._keys, WINDOW_END])
        return merged.select(self._groups.schema.names).cast(self._groups.schema)

    # -- time ---------------------------------------------------------------------------

    def _advance(self, watermark: int) -> list[pa.RecordBatch]:
        """Emit the windows ``watermark`` fires."""
        if not self._timers.advance(watermark).num_rows:
            return []
        ends = self._groups.rows.column(WINDOW_END).to_numpy()
        fired = self._groups.take(ends - 1 <= watermark)
        self._merged_rows = min(self._merged_rows, len(self._groups))
        if not fired.num_rows:
            return []
        merged = self._merge(fired)
        order = [(WINDOW_END, "ascending"), *((k, "ascending") for k in self._keys)]
        merged = merged.take(pc.sort_indices(merged, sort_keys=order))
        columns = [merged.column(k) for k in self._keys] + self._accumulators.finish(merged)
        out = []
        for start in range(0, merged.num_rows, self._batch_size):
            length = min(self._batch_size, merged.num_rows - start)
            out.append(make_batch([c.slice(start, length) for c in columns], self.node.schema,
                                  length))
        return out

    # -- checkpoints --------------------------------------------------------------------

    def _restored(self) -> None:
        self._merged_rows = len(self._groups)


def _computable(dtype: pa.DataType) -> pa.DataType:
    """The type a column is grouped or aggregated in: SQL NULL (no kernels) as int64."""
    return pa.int64() if pa.types.is_null(dtype) else dtype
