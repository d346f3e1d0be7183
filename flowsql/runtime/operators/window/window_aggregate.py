"""The operator of a ``WindowAggregateExec``: Flink's window TVFs (TUMBLE, HOP, CUMULATE,
SESSION) followed by GROUP BY keys, window_start, window_end, over event time.

The operator first evaluates the plan's expressions (rowtime, group keys, aggregate
arguments) into one narrow batch per input batch (``window_specs.narrow_schema``), adding
each record's arrival watermark when the plan asks for event-time watermarks; the windowing
then works on those columns by position, as ``window_specs.window_aggregate_spec`` names
them; its output (keys, window_start, window_end, aggregates) is put into the plan's
column order and types. :meth:`WindowAggregateOperator.from_spec` builds the windowing
alone, over batches that already have the spec's columns, with output in the windowing's
order: that is how the windowing is tested against a reference model.

Streaming plans put a watermark assigner below this node and its watermarks arrive through
``process_watermark``. A node with ``watermark_delay_ms`` generates them here instead, from
the rowtime in input order, with :class:`BoundedOutOfOrderness` -- equivalent to generating
them at the scan when the node sits over the scan of the table that declares the WATERMARK
(window TVFs take ``TABLE t``) and everything between keeps row order. That generator is
not checkpointed (Flink does not checkpoint source watermarks either): after a restore it
starts over, and every row's arrival watermark is still at least the restored one, which
makes a restored run equal an uninterrupted one at auto-watermark-interval 0.
Records whose rowtime is NULL are dropped (as in Flink) before they count for watermarks;
records failing the plan's ``predicate`` are dropped after.

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

Fixed windows (TUMBLE, HOP, CUMULATE) use Flink's slicing (``window.slicing``): each
record is pre-aggregated once per batch, with one Acero group-by over (keys, slice end),
into the slice of ``unit`` width that holds it (the size, slide or step), and the partials
are stored per slice without touching older state (``window.slice_state``). A window
is the merge of its slices, computed when it fires; slices are forgotten once the last
window that holds them has fired. A record whose last window is due at its arrival is
late; any other record joins its slice, which is exactly its windows that fire later.
That equals "the windows still open at arrival" because windows fire in order of their
ends, and a batch whose per-record watermarks make a window due that has not fired yet
(records arriving behind the watermark) is cut where that happens and the window fired
in between. The slices live in the keyed table ``windows`` (one row per key and slice
end) only in snapshots.

Sessions need one more idea: within a batch, rows are processed in segments that end
where some session may fire or where a row's own session is already late (that row is
merged alone, into stored sessions only), because for sessions the order of firing and
merging changes the result. Each (key, session) has an id and one event-time timer in the
timer service; firing takes the due timers' windows out of state. All of it lives in the
operator's :class:`StateStore`; the watermark and the id counter are written to union list
state on snapshot (restored as the minimum watermark and the maximum counter, so a
rescaled restore never reuses an id).

For fixed windows, per-record watermarks are taken as their running maximum within a
batch (the watermark never moves back).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.physical import WINDOW_END, WINDOW_START, WINDOW_TIME, WindowAggregateExec
from flowsql.runtime.events import MAX_WATERMARK
from flowsql.runtime.expressions import compile_expr, compile_predicate
from flowsql.runtime.kernels.batches import make_batch
from flowsql.runtime.kernels.epoch_millis import epoch_millis
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.window.accumulators import Accumulators
from flowsql.runtime.operators.window.session_merging import merge_sessions
from flowsql.runtime.operators.window.slice_state import SLICE_END, SliceState
from flowsql.runtime.operators.window.slicing import Slicing
from flowsql.runtime.operators.window.window_specs import (
    WindowAggregateSpec,
    aggregate_arguments,
    window_aggregate_spec,
)
from flowsql.runtime.state.keyed_table import KEY_GROUP
from flowsql.runtime.state.progress import EventTimeProgress
from flowsql.runtime.state.store import StateStore, add_to_gauge
from flowsql.runtime.time.watermarks import MIN_WATERMARK, BoundedOutOfOrderness

LATE_RECORDS_DROPPED = "late_records_dropped"
_ID_SHIFT = 16  # window id = (counter << 16) | subtask index: unique across subtasks


class WindowAggregateOperator(Operator):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    def __init__(self, node: WindowAggregateExec) -> None:
        self._build(window_aggregate_spec(node), node)

    @classmethod
    def from_spec(cls, spec: WindowAggregateSpec) -> WindowAggregateOperator:
        """The windowing alone: input batches have ``spec.input_schema``, output batches
        ``output_schema`` (keys, window_start, window_end, aggregates), and watermarks
        come only from the spec's ``watermark_column`` and ``process_watermark``."""
        operator = cls.__new__(cls)
        operator._build(spec, None)
        return operator

    def _build(self, spec: WindowAggregateSpec, node: WindowAggregateExec | None) -> None:
        self.node = node
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
        # a planned operator files state under the job's key groups, which are the ones
        # the exchange in front of it routes by (``pipeline.max-parallelism``)
        self._store = StateStore.for_context(
            context, None if self.node is not None else self.spec.max_parallelism)
        self._progress = EventTimeProgress(self._store)
        if self.spec.window.kind == "session":
            self._windows = self._store.keyed_table("windows", self._state_schema)
            self._timers = self._store.timers("windows")
        else:
            self._slicing = Slicing.of(self.spec.window)
            self._slices = SliceState(self._keys, list(self._state_schema)[:len(self._keys)],
                                      self._accumulators)
            self._windows = self._store.keyed_table(
                "windows", pa.schema(list(self._slices.table_schema)[1:]))
            # the slices live outside the store between snapshots: count them too
            add_to_gauge(context.gauges, "state_rows", self._slices.num_rows)
            add_to_gauge(context.gauges, "state_bytes", self._slices.nbytes)
        self._watermark = MIN_WATERMARK
        self._next_counter = 0
        if self.node is not None:
            self._open_plan_columns(self.node)

    # -- plan columns -------------------------------------------------------------------

    def _open_plan_columns(self, node: WindowAggregateExec) -> None:
        schema = node.input.schema
        self._time = compile_expr(node.time_column, schema)
        self._keep = (compile_predicate(node.predicate, schema)
                      if node.predicate is not None else None)
        self._evaluators = [compile_expr(k, schema) for k in node.keys] + [
            compile_expr(e, schema) for e in aggregate_arguments(node.aggs)]
        self._generator = (BoundedOutOfOrderness(node.watermark_delay_ms,
                                                 node.watermark_interval_ms)
                           if node.watermark_delay_ms is not None else None)

    def _evaluate(self, batch: pa.RecordBatch, time: pa.Array
                  ) -> tuple[pa.RecordBatch, int | None]:
        """A plan row batch and its rowtimes (none NULL) as the spec's columns, and the
        watermark generated after it."""
        ts = epoch_millis(time, "window aggregate")
        columns = [pa.array(ts, pa.int64()).cast(pa.timestamp("ms"))]
        columns += [fn(batch) for fn in self._evaluators]
        emit: int | None = None
        if self._generator is not None:
            marks = self._generator.on_batch(ts)
            columns.append(pa.array(marks.row_watermarks, pa.int64()))
            emit = marks.emit
        narrow = pa.RecordBatch.from_arrays(columns, schema=self.spec.input_schema)
        if self._keep is not None:
            narrow = narrow.filter(self._keep(batch))
        return narrow, emit

    def _to_plan(self, out: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
        """Windowing output (keys, window_start, window_end, aggregates) -> plan order."""
        if self.node is None:
            return out
        n_keys = len(self.node.keys)
        source = {WINDOW_START: n_keys, WINDOW_END: n_keys + 1}

        def group_column(b: pa.RecordBatch, slot: int | str) -> pa.Array:
            if slot == WINDOW_TIME:  # the window's time: its end minus 1 ms, as the TVF's
                end = b.column(n_keys + 1)
                return pc.subtract(end, pa.scalar(1, pa.duration("ms")).cast(
                    pa.duration(end.type.unit)))
            return b.column(source[slot] if isinstance(slot, str) else slot)

        return [make_batch([group_column(b, s) for s in self.node.group_slots]
                           + [b.column(n_keys + 2 + i) for i in range(len(self.node.aggs))],
                           self.node.schema, b.num_rows) for b in out]

    # -- data ---------------------------------------------------------------------------

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if self.node is None:
            return self._aggregate(batch)
        time = self._time(batch)
        if time.null_count:
            valid = time.is_valid()
            batch, time = batch.filter(valid), time.filter(valid)
        if not batch.num_rows:
            return []
        narrow, emit = self._evaluate(batch, time)
        out = self._aggregate(narrow)
        if emit is not None:
            out.extend(self._advance(emit))
        return self._to_plan(out)

    def _aggregate(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        """Window the spec's columns: add the rows to their windows and fire what their
        arrival watermarks make due."""
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
            out = self._process_fixed(batch, ts, np.maximum.accumulate(arrival))
        out.extend(self._advance(int(arrival.max())))
        return out

    def process_watermark(self, watermark: int) -> Iterable[pa.RecordBatch]:
        """Watermarks from upstream (streaming plans generate them at the source)."""
        return self._to_plan(self._advance(watermark))

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        return self._to_plan(self._advance(MAX_WATERMARK))

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
                       arrival: np.ndarray) -> list[pa.RecordBatch]:
        """Add the batch to its slices. ``arrival`` is nondecreasing (the watermark only
        moves forward). A record is late when the last window of its slice is due at its
        arrival; otherwise adding it to its slice makes it join exactly the windows of the
        slice that fire later. That equals Flink's "every window still open at arrival"
        unless a window of the slice became due after the batch began but has not fired
        yet; only then is the batch cut where the arrival watermark reaches a new window
        end, firing those windows in between (so in-order input stays one piece)."""
        slice_ends = self._slicing.slice_ends(ts)
        live = self._slicing.last_window_ends(slice_ends) - 1 > arrival
        self._count_late(int(len(live) - np.count_nonzero(live)))
        due = self._slicing.first_due_end(self._watermark) - 1 <= arrival
        if not (due & live & (slice_ends - 1 <= arrival)).any():
            self._add_to_slices(batch, slice_ends, live)
            return []
        out: list[pa.RecordBatch] = []
        epochs = self._slicing.epochs(arrival)
        bounds = np.concatenate(([0], np.flatnonzero(epochs[1:] != epochs[:-1]) + 1,
                                 [len(epochs)]))
        for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            out.extend(self._advance(int(arrival[start])))
            part = np.zeros(len(live), bool)
            part[start:stop] = live[start:stop]
            self._add_to_slices(batch, slice_ends, part)
        return out

    def _add_to_slices(self, batch: pa.RecordBatch, slice_ends: np.ndarray,
                       rows: np.ndarray) -> None:
        """Pre-aggregate the ``rows`` (a mask) of ``batch`` per (keys, slice) and store the
        partials; key groups are hashed on the partial rows, one per (key, slice)."""
        count = int(np.count_nonzero(rows))
        if not count:
            return
        keys = [batch.column(i) for i in self.spec.group_keys]
        arguments = self._accumulators.arguments(batch)
        columns = [*keys, pa.array(slice_ends, pa.int64()), *arguments.values()]
        table = pa.Table.from_arrays(columns, names=[*self._keys, SLICE_END, *arguments])
        if count < len(rows):
            table = table.filter(pa.array(rows))
        partial = self._accumulators.partial(table, [*self._keys, SLICE_END])
        groups = self._windows.key_groups_of([partial.column(k) for k in self._keys],
                                             partial.num_rows)
        partial = partial.add_column(0, KEY_GROUP, pa.array(groups, pa.int32()))
        self._slices.add(partial, partial.column(SLICE_END).to_numpy())

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
        previous, self._watermark = self._watermark, watermark
        if self.spec.window.kind != "session":
            return self._fire_slices(previous, watermark)
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

    def _fire_slices(self, previous: int, watermark: int) -> list[pa.RecordBatch]:
        """Emit the windows that became due, ascending by end, each from its slices, and
        forget the slices no later window reads."""
        slice_ends = self._slices.ends()
        ends = self._slicing.window_ends_due(slice_ends, previous, watermark)
        if not len(ends):
            return []
        last_ends = self._slicing.last_window_ends(slice_ends)
        tables = []
        for end in ends.tolist():
            start = self._slicing.window_start(end)
            merged = self._slices.window(start, end, set(slice_ends[last_ends > end].tolist()))
            self._slices.drop_through(slice_ends, last_ends, end)
            if merged is None:
                continue
            n = merged.num_rows
            columns = ([merged.column(k) for k in self._keys]
                       + [pa.array(np.full(n, t, np.int64)).view(self._time_type)
                          for t in (start, end)]
                       + self._accumulators.finish(merged))
            tables.append(pa.Table.from_arrays(columns, schema=self.output_schema))
        if not tables:
            return []
        return pa.concat_tables(tables).combine_chunks().to_batches()

    # -- checkpoints --------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        self._progress.save(self._watermark, self._next_counter)
        if self.spec.window.kind == "session":
            return self._store.snapshot()
        self._windows.replace(self._slices.to_table())  # the slices live outside the store
        snapshot = self._store.snapshot()
        self._windows.replace(self._windows.schema.empty_table())
        return snapshot

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)
        restored = self._progress.restored()
        if restored is not None:
            self._watermark, self._next_counter = restored
        if self.spec.window.kind != "session":
            self._slices.load(self._windows.rows)
            self._windows.replace(self._windows.schema.empty_table())
