"""Window Top-N and window deduplication: ROW_NUMBER per (partition keys, window), final
when the window fires (Flink's ``WindowRankOperator``).

Contract and semantics:

* input rows carry their window (``window_start``, ``window_end`` columns of a window TVF);
  a row is buffered in keyed state under its partition keys' key group, and each (partition,
  window) has one event-time timer at ``window_end - 1``;
* when the watermark reaches ``window_end - 1`` the window's rows are ranked, the rows with
  ``lower <= rn <= upper`` are emitted (insert-only: a fired window's ranks never change,
  which is why the planner may treat the output as append-only) and the state is dropped;
* a row whose window has already fired (``window_end - 1 <= watermark`` on arrival) is
  late: dropped and counted in the metric ``late_records_dropped``;
* ties in ORDER BY keep arrival order, except for a keep-last deduplication (rank 1 of
  ``ORDER BY rowtime DESC``), where the latest arrival wins as in Flink's
  ``RowTimeWindowDeduplicateRecordsCombiner`` (``>=``);
* end of input (watermark +infinity) fires every window.

The timer namespace is a 64-bit hash of (partition keys, window): it only has to tell
windows apart for the timer service; firing itself takes every stored row whose window is
due, so even a hash collision could not lose a row. The watermark is written to union list
state on snapshot and restored as the minimum.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.physical_streaming import RankExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.rank import ranking_state
from flowsql.runtime.operators.watermark.event_time_operator import EventTimeOperator
from flowsql.runtime.partitioning import hash_columns

LATE_RECORDS_DROPPED = "late_records_dropped"
_WINDOW_END = "__window_end"


class WindowRank(EventTimeOperator):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    def __init__(self, node: RankExec) -> None:
        if node.window is None:
            raise ExecutionError("window rank needs the window bounds of its input")
        self.node = node
        self._data_schema = ranking_state.stored_data_schema(node)
        self._state_schema = pa.schema([*self._data_schema,
                                        pa.field(_WINDOW_END, pa.int64())])
        # keep-last deduplication: among equal rowtimes the latest arrival wins
        self._latest_wins = (node.time_attribute == "rowtime" and node.lower == node.upper == 1
                             and len(node.order) == 1 and not node.order[0].ascending)

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        context.metrics.setdefault(LATE_RECORDS_DROPPED, 0)
        self._partition, self._order = ranking_state.compile_all(self.node)
        assert self.node.window is not None
        schema = self.node.input.schema
        self._start = compile_expr(self.node.window[0], schema)
        self._end = compile_expr(self.node.window[1], schema)
        self._start_event_time(context)
        self._rows = self._store.keyed_table("rows", self._state_schema)
        self._timers = self._store.timers("windows")

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if not batch.num_rows:
            return []
        ends = ranking_state.millis(self._end(batch), "window rank")
        on_time = ends - 1 > self._watermark
        late = int((~on_time).sum())
        if late:
            self.context.metrics[LATE_RECORDS_DROPPED] += late
            batch, ends = batch.filter(pa.array(on_time)), ends[on_time]
            if not batch.num_rows:
                return []
        keys = [fn(batch) for fn in self._partition]
        starts = ranking_state.millis(self._start(batch), "window rank")
        groups = self._rows.key_groups_of(keys, batch.num_rows)
        namespaces = hash_columns([*keys, pa.array(starts), pa.array(ends)]).view(np.int64)
        _, first = np.unique(namespaces, return_index=True)
        self._timers.register(groups[first], namespaces[first], ends[first] - 1)
        added = ranking_state.state_rows(groups, ranking_state.renamed(batch, self._data_schema),
                                  [(_WINDOW_END, ends)], self._rows.schema)
        self._rows.replace(pa.concat_tables([self._rows.rows, added]))
        return []

    def _advance(self, watermark: int) -> list[pa.RecordBatch]:
        if not self._timers.advance(watermark).num_rows:
            return []
        ends = self._rows.rows.column(_WINDOW_END).to_numpy()
        fired = self._rows.take(ends - 1 <= watermark)
        return self._emit(fired) if fired.num_rows else []

    def _emit(self, fired: pa.Table) -> list[pa.RecordBatch]:
        """Rank the rows of the fired windows (in stored, i.e. arrival, order within each
        partition) and return the kept ones, window by window."""
        data = ranking_state.as_batch(fired, self._data_schema)
        n = data.num_rows
        window = [self._start(data), self._end(data)]
        ids = ranking_state.partition_ids([*(fn(data) for fn in self._partition), *window], n)
        arrival = np.arange(n, dtype=np.int64)
        permutation, numbers = ranking_state.rank(
            ids, [fn(data) for fn in self._order], self.node.order,
            [(arrival, not self._latest_wins)])
        # windows in the order they close (a stable sort keeps each window's rows together)
        ends = fired.column(_WINDOW_END).to_numpy()
        by_end = np.argsort(ends[permutation], kind="stable")
        permutation, numbers = permutation[by_end], numbers[by_end]
        kept = (numbers >= self.node.lower) & (numbers <= self.node.upper)
        return ranking_state.output(self.node, data, permutation[kept], numbers[kept], None)
