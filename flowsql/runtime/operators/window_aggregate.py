"""Window aggregate over event time: Flink's window TVFs (TUMBLE, HOP, CUMULATE, SESSION)
followed by GROUP BY keys, window_start, window_end.

Semantics (Flink's, which the tests check row by row):

* a window is ``[window_start, window_end)`` and fires once the watermark reaches
  ``window_end - 1``; it then emits one row (group keys, window_start, window_end,
  aggregates) and its state is dropped: results are insert-only, there are no updates;
* a record joins every window it belongs to that has not fired when it arrives; a record
  with no such window is late, dropped, and counted in the metric ``late_records_dropped``
  (a late record of HOP or CUMULATE still joins its later windows);
* sessions are per group key; a record's session ``[ts, ts + gap)`` merges with every
  session it overlaps or touches, and lateness is judged on the merged session (a record
  that is late on its own survives if it extends a session that is still open);
* end of input is the watermark +infinity: every window fires.

"When it arrives" is per record: with the spec's ``watermark_column`` each row carries the
watermark in effect at its arrival (``time.watermarks``, auto-watermark-interval 0), and
the result equals processing the records one by one with a watermark after each, however
the input is chunked. Without it, every row of a batch sees the operator's watermark.

Vectorized per batch: windows are assigned with numpy, pre-aggregated with one Acero
group-by over (key group, keys, window), and merged into the state of the affected key
groups with another. Sessions need one more idea: within a batch, rows are processed in
segments that end where some session may fire or where a row's own session is already
late (that row is merged alone, into stored sessions only), because for sessions the
order of firing and merging changes the result. Each (key, window) has an id and one
event-time timer in the timer service; firing takes the due timers' windows out of
state. All of it lives in the operator's :class:`StateStore`; the watermark and the id
counter are written to union list state on snapshot (restored as the minimum watermark
and the maximum counter, so a rescaled restore never reuses an id).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.runtime.events import MAX_WATERMARK
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.windowing.accumulators import Accumulators
from flowsql.runtime.operators.windowing.assign import assign_windows
from flowsql.runtime.operators.windowing.sessions import merge_sessions
from flowsql.runtime.operators.windowing.specs import WindowAggregateSpec
from flowsql.runtime.state.keyed_table import KEY_GROUP
from flowsql.runtime.state.progress import EventTimeProgress
from flowsql.runtime.state.store import StateStore
from flowsql.runtime.time.watermarks import MIN_WATERMARK

LATE_RECORDS_DROPPED = "late_records_dropped"
_ID_SHIFT = 16  # window id = (counter << 16) | subtask index: unique across subtasks


class WindowAggregateOperator(Operator):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    def __init__(self, spec: WindowAggregateSpec) -> None:
        self.spec = spec
        schema = spec.input_schema
        self._keys = [f"k{i}" for i in range(len(spec.group_keys))]
        self._accumulators = Accumulators(spec.aggregates, schema)
        time_type = schema.field(spec.time_column).type
        if not (pa.types.is_timestamp(time_type) or pa.types.is_integer(time_type)):
            raise ExecutionError(f"window aggregate: rowtime column has type {time_type}, "
                                 "expected a timestamp")
        self._time_type = (pa.timestamp("ms", time_type.tz) if pa.types.is_timestamp(time_type)
                           else pa.int64())
        key_fields = [pa.field(k, schema.field(i).type) for k, i in
                      zip(self._keys, spec.group_keys)]
        self._state_schema = pa.schema(
            key_fields + [pa.field("window_start", pa.int64()), pa.field("window_end", pa.int64()),
                          pa.field("window_id", pa.int64())] + self._accumulators.fields)
        self.output_schema = pa.schema(
            [schema.field(i) for i in spec.group_keys]
            + [pa.field("window_start", self._time_type, nullable=False),
               pa.field("window_end", self._time_type, nullable=False)]
            + self._accumulators.output_fields)

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        context.metrics.setdefault(LATE_RECORDS_DROPPED, 0)
        self._store = StateStore(context.subtask_index, context.parallelism,
                                 self.spec.max_parallelism)
        self._windows = self._store.keyed_table("windows", self._state_schema)
        self._timers = self._store.timers("windows")
        self._progress = EventTimeProgress(self._store)
        self._watermark = MIN_WATERMARK
        self._next_counter = 0

    # -- data ---------------------------------------------------------------------------

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if not batch.num_rows:
            return []
        ts = self._event_times(batch)
        arrival = np.full(batch.num_rows, self._watermark, np.int64)
        if self.spec.watermark_column is not None:
            column = batch.column(self.spec.watermark_column)
            arrival = np.maximum(arrival, pc.fill_null(column, MIN_WATERMARK).to_numpy())
        if self.spec.window.kind == "session":
            out = self._process_sessions(batch, ts, arrival)
        else:
            self._process_fixed(batch, ts, arrival)
            out = []
        out.extend(self._advance(int(arrival.max())))
        return out

    def process_watermark(self, watermark: int) -> Iterable[pa.RecordBatch]:
        return self._advance(watermark)

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        return self._advance(MAX_WATERMARK)

    def _event_times(self, batch: pa.RecordBatch) -> np.ndarray:
        column = batch.column(self.spec.time_column)
        if column.null_count:
            raise ExecutionError("window aggregate: the rowtime attribute must not be NULL "
                                 f"({column.null_count} NULL values in a batch)")
        if pa.types.is_timestamp(column.type):
            column = pc.cast(column, pa.timestamp("ms", column.type.tz), safe=False)
        return pc.cast(column, pa.int64()).to_numpy()

    def _rows(self, batch: pa.RecordBatch, take: np.ndarray, starts: np.ndarray,
              ends: np.ndarray) -> pa.Table:
        """(key group, keys, window, aggregate arguments) per assigned (row, window)."""
        indices = pa.array(take)
        keys = [batch.column(i).take(indices) for i in self.spec.group_keys]
        groups = self._windows.key_groups_of(keys, len(take))
        arguments = self._accumulators.arguments(batch)
        columns = ([pa.array(groups), *keys, pa.array(starts, pa.int64()),
                    pa.array(ends, pa.int64())] + [a.take(indices) for a in arguments.values()])
        names = [KEY_GROUP, *self._keys, "window_start", "window_end", *arguments]
        return pa.Table.from_arrays(columns, names=names)

    def _partial(self, rows: pa.Table) -> pa.Table:
        partial = self._accumulators.partial(
            rows, [KEY_GROUP, *self._keys, "window_start", "window_end"])
        return partial.append_column("window_id", pa.nulls(partial.num_rows, pa.int64()))

    def _process_fixed(self, batch: pa.RecordBatch, ts: np.ndarray,
                       arrival: np.ndarray) -> None:
        rows, starts, ends = assign_windows(self.spec.window, ts)
        open_ = ends - 1 > arrival[rows]
        joined = np.bincount(rows[open_], minlength=batch.num_rows)
        self._count_late(int((joined == 0).sum()))
        if not open_.any():
            return
        partial = self._partial(self._rows(batch, rows[open_], starts[open_], ends[open_]))
        stored = self._take_key_groups(partial)
        merged = self._accumulators.merge(
            pa.concat_tables([stored, partial.select(stored.column_names)
                              .cast(stored.schema)]),
            [KEY_GROUP, *self._keys, "window_start", "window_end"],
            extra=[("window_id", "min")])
        self._store_windows(merged)

    def _process_sessions(self, batch: pa.RecordBatch, ts: np.ndarray,
                          arrival: np.ndarray) -> list[pa.RecordBatch]:
        gap = self.spec.window.gap
        rows = self._rows(batch, np.arange(batch.num_rows), ts, ts + gap)
        last_ms = ts + gap - 1
        alone_late = last_ms <= arrival
        out: list[pa.RecordBatch] = []
        position, n = 0, batch.num_rows
        while position < n:
            out.extend(self._advance(int(arrival[position])))
            end = self._segment_end(position, ts, last_ms, alone_late, arrival)
            partial = self._partial(rows.slice(position, end - position))
            merged = merge_sessions(self._take_key_groups(partial), partial, self._keys,
                                    self._accumulators, only_into_stored=alone_late[position])
            self._count_late(merged.dropped)
            self._timers.delete(merged.retired)
            self._store_windows(merged.rows)
            position = end
        return out

    def _segment_end(self, position: int, ts: np.ndarray, last_ms: np.ndarray,
                     alone_late: np.ndarray, arrival: np.ndarray) -> int:
        """End of the segment starting at ``position``: the first later row that is late on
        its own, or that is *behind* the watermark (``ts <= watermark + 1``) while its
        arrival watermark may fire a session (a stored one, or one opened by an earlier row
        of the segment); a row late on its own is a segment by itself.

        Why rows ahead of the watermark never cut: a session due at watermark ``w`` ends at
        or before ``w + 1``, and a row with ``ts > w + 1`` cannot touch it, so merging that
        row before or after the firing gives the same sessions. Only out-of-order rows
        split a batch, which keeps in-order input at one segment per batch."""
        if alone_late[position]:
            return position + 1
        pending = self._timers.next_timestamp()
        bound = np.minimum.accumulate(last_ms[position:-1])
        if pending is not None:
            bound = np.minimum(bound, pending)
        rest = slice(position + 1, None)
        behind = ts[rest] <= arrival[rest] + 1
        stops = alone_late[rest] | (behind & (arrival[rest] >= bound))
        hits = np.flatnonzero(stops)
        return position + 1 + int(hits[0]) if len(hits) else len(last_ms)

    # -- state --------------------------------------------------------------------------

    def _take_key_groups(self, partial: pa.Table) -> pa.Table:
        """Remove from state and return the stored windows of the key groups in ``partial``."""
        groups = np.unique(partial.column(KEY_GROUP).to_numpy())
        return self._windows.take(self._windows.in_key_groups(groups))

    def _store_windows(self, windows: pa.Table) -> None:
        """Add windows to state; those without an id get a fresh id and a timer."""
        ids = pc.fill_null(windows.column("window_id"), -1).to_numpy()
        new = ids < 0
        if new.any():
            count = int(new.sum())
            counters = self._next_counter + np.arange(count, dtype=np.int64)
            self._next_counter += count
            ids = ids.copy()
            ids[new] = (counters << _ID_SHIFT) | self.context.subtask_index
            windows = windows.set_column(windows.schema.get_field_index("window_id"),
                                         "window_id", pa.array(ids))
            ends = windows.column("window_end").to_numpy()
            groups = windows.column(KEY_GROUP).to_numpy()
            self._timers.register(groups[new], ids[new], ends[new] - 1)
        stored = self._windows.rows
        self._windows.replace(pa.concat_tables(
            [stored, windows.select(stored.column_names).cast(stored.schema)]))

    def _count_late(self, count: int) -> None:
        if count:
            self.context.metrics[LATE_RECORDS_DROPPED] += count

    # -- time ---------------------------------------------------------------------------

    def _advance(self, watermark: int) -> list[pa.RecordBatch]:
        """Move event time to ``watermark`` and emit the windows whose timers are due."""
        if watermark <= self._watermark:
            return []
        self._watermark = watermark
        due = self._timers.advance(watermark)
        if not due.num_rows:
            return []
        fired = self._windows.take(
            pc.is_in(self._windows.rows.column("window_id"), due.column("namespace"))
            .to_numpy(zero_copy_only=False))
        order = [("window_end", "ascending"), ("window_start", "ascending")]
        fired = fired.sort_by(order + [(k, "ascending") for k in self._keys])
        columns = ([fired.column(k) for k in self._keys]
                   + [pc.cast(fired.column(c), self._time_type)
                      for c in ("window_start", "window_end")]
                   + self._accumulators.finish(fired))
        table = pa.Table.from_arrays(columns, schema=self.output_schema)
        return table.combine_chunks().to_batches()

    # -- checkpoints --------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        self._progress.save(self._watermark, self._next_counter)
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)
        restored = self._progress.restored()
        if restored is not None:
            self._watermark, self._next_counter = restored
