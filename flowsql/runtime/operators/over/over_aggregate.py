"""OVER aggregates in event time: Flink's RowTime{Range,Rows}{Bounded,Unbounded}Preceding
functions, for ``agg(..) OVER (PARTITION BY keys ORDER BY rowtime ROWS|RANGE BETWEEN
(n | UNBOUNDED) PRECEDING AND CURRENT ROW)`` over an insert-only stream.

Contract: the input is insert-only; the output is insert-only, every input row that is not
late exactly once, with one column per aggregate appended (``node.schema``).

Semantics (Flink's, which the tests check row by row):

* lateness of a bounded frame (``n PRECEDING``) is judged per partition key, as Flink's
  RowTime{Range,Rows}BoundedPrecedingFunction do: a row is late when its rowtime is at or
  before the last rowtime already emitted for its key (``lastTriggeringTs``), since its
  frame would then precede rows emitted with results that ignored it. A row behind the
  watermark but after its key's last emitted rowtime is kept and released by the next
  watermark advance. An UNBOUNDED frame judges by the watermark (Flink's
  AbstractRowTimeUnboundedPrecedingOver): ``rowtime <= watermark`` is late. Late rows are
  dropped and counted in ``late_records_dropped``; rows with a NULL rowtime are dropped
  too. (Flink starts ``lastTriggeringTs`` at 0, which also drops bounded-frame rows at or
  before the epoch on a key's first arrival; here a key without emitted rows has no bound.)
* every other row waits in keyed state until the watermark reaches its rowtime; then it is
  final for its key -- no later row of the key can precede it -- and it is emitted with its
  aggregates. Rows released together come out ordered by (rowtime, arrival);
* RANGE: rows of a partition with equal rowtime are peers and get equal values, computed
  over every row of the partition with rowtime in ``[ts - preceding, ts]`` (unbounded:
  ``<= ts``), peers included;
* ROWS: a row's frame is itself and up to ``preceding`` earlier rows of its partition in
  (rowtime, arrival) order (unbounded: all earlier rows);
* COUNT(*) counts rows, COUNT(x) non-NULL values; SUM / AVG / MIN / MAX are NULL over a
  frame without non-NULL values; results are cast to each call's type;
* a user-defined aggregate runs once per distinct frame of the released rows
  (``runtime.user_functions.frames``); under an UNBOUNDED frame it must be a class, whose
  accumulator summarizes each partition's history (the planner refuses a function);
* end of input is the watermark +infinity: every waiting row is released.

Why wait for the watermark: only then are the rows before a row's rowtime complete, so the
result never needs a retraction and the output stays insert-only (Flink's design).

State (all in the operator's :class:`StateStore`, keyed by partition key group):
``pending`` holds the waiting rows (input columns, evaluated keys and arguments, rowtime,
arrival sequence), with one event-time timer per (key group, rowtime) so a watermark that
releases nothing costs a binary search; ``history`` holds what future frames can still
reach (:mod:`.over_aggregate_evaluation`: rows with rowtime > last emitted rowtime -
preceding for RANGE, the last ``preceding`` rows for ROWS, one running-accumulator row per
partition for UNBOUNDED); ``last`` (bounded frames only) holds each key's last emitted rowtime.
The watermark and the arrival counter go to union list state on snapshot.

Vectorized per released set: one watermark advance takes every due row out of
``pending`` and the history of their key groups out of ``history``, evaluates all frames
in one pass over the sorted union with the batch window engine's frame geometry and frame
aggregates, and writes the new history back.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from flowsql.errors import PlanError
from flowsql.planner.physical_streaming import OverAggregateExec
from flowsql.planner.schema import to_arrow_schema
from flowsql.runtime.events import MAX_WATERMARK
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import batch_size, conform, table_to_batches
from flowsql.runtime.kernels.epoch_millis import epoch_millis
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.aggregate.changelog_segments import first_occurrences, row_ids
from flowsql.runtime.operators.over.over_aggregate_evaluation import (
    POSITION,
    SUPPORTED,
    OverFrame,
    contribution_fields,
    contributions,
    evaluate,
)
from flowsql.runtime.operators.watermark.event_time_operator import EventTimeOperator
from flowsql.runtime.state.keyed_table import KEY_GROUP

LATE_RECORDS_DROPPED = "late_records_dropped"


class OverAggregateOperator(EventTimeOperator):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    def __init__(self, node: OverAggregateExec) -> None:
        self.node = node
        bad = [a.name for a in node.aggs if (a.name not in SUPPORTED and a.function is None)
               or a.distinct or a.filter is not None]
        if bad:
            raise PlanError(f"OVER aggregate over a stream cannot compute {', '.join(bad)}")
        if node.frame not in ("rows", "range"):
            raise PlanError(f"OVER aggregate: unknown frame mode {node.frame!r}")
        if node.preceding is not None and node.preceding < 0:
            raise PlanError(f"OVER aggregate: negative PRECEDING offset {node.preceding}")
        self._window = OverFrame(node.frame, node.preceding, node.time_column)
        self._keys = [f"k{i}" for i in range(len(node.partition_keys))]
        self._arguments = [None if a.name == "count_star" or a.function is not None
                           else a.args[0] for a in node.aggs]
        #: every argument of each user-defined aggregate, by aggregate index
        self._user_arguments = {j: a.args for j, a in enumerate(node.aggs)
                                if a.function is not None}
        input_schema = to_arrow_schema(node.input.schema)
        self._width = len(input_schema)
        keys = [pa.field(k, e.dtype) for k, e in zip(self._keys, node.partition_keys)]
        common = [*keys, pa.field("ts", pa.int64()), pa.field("seq", pa.int64())]
        self._pending_schema = pa.schema(
            common + [pa.field(f"x{j}", e.dtype) for j, e in enumerate(self._arguments)
                      if e is not None]
            + [pa.field(f"x{j}_{m}", e.dtype) for j, args in self._user_arguments.items()
               for m, e in enumerate(args)]
            + [pa.field(f"c{i}", f.type) for i, f in enumerate(input_schema)])
        self._contributions = contribution_fields(
            node.aggs, [None if e is None else e.dtype for e in self._arguments],
            unbounded=node.preceding is None)
        self._history_schema = pa.schema(common + self._contributions)
        # bounded frames judge lateness per key (see the module docstring)
        self._per_key = node.preceding is not None
        self._last_schema = pa.schema([*keys, pa.field("ts", pa.int64())])

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        context.metrics.setdefault(LATE_RECORDS_DROPPED, 0)
        schema = self.node.input.schema
        self._time = compile_expr(self.node.time_column, schema)
        self._key_fns = [compile_expr(k, schema) for k in self.node.partition_keys]
        self._arg_fns = [None if e is None else compile_expr(e, schema)
                         for e in self._arguments]
        self._user_fns = [(compile_expr(e, schema), e.dtype)
                          for args in self._user_arguments.values() for e in args]
        self._start_event_time(context)
        self._pending = self._store.keyed_table("pending", self._pending_schema)
        self._history = self._store.keyed_table("history", self._history_schema)
        self._timers = self._store.timers("pending")
        if self._per_key:
            self._last = self._store.keyed_table("last", self._last_schema)

    # -- data ---------------------------------------------------------------------------

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        time = self._time(batch)
        keep = np.asarray(time.is_valid().to_numpy(zero_copy_only=False), bool)
        if time.null_count:
            time = time.filter(pa.array(keep))
        ts = epoch_millis(time, "OVER aggregate") if len(time) else np.empty(0, np.int64)
        rows = batch.filter(pa.array(keep)) if not keep.all() else batch
        keys = [conform(fn(rows), e.dtype) for fn, e in zip(self._key_fns,
                                                             self.node.partition_keys)]
        on_time = ts > (self._last_emitted(keys, rows.num_rows) if self._per_key
                        else self._watermark)
        late = int(len(ts) - on_time.sum())
        if late:
            self.context.metrics[LATE_RECORDS_DROPPED] += late
        if not on_time.any():
            return []
        if not on_time.all():
            mask = pa.array(on_time)
            rows, keys, ts = rows.filter(mask), [k.filter(mask) for k in keys], ts[on_time]
        n = rows.num_rows
        groups = self._pending.key_groups_of(keys, n)
        seq = self._next_counter + np.arange(n, dtype=np.int64)
        self._next_counter += n
        arguments = [conform(fn(rows), e.dtype) for fn, e in zip(self._arg_fns, self._arguments)
                     if fn is not None and e is not None]
        arguments += [conform(fn(rows), dtype) for fn, dtype in self._user_fns]
        columns = [pa.array(groups), *keys, pa.array(ts), pa.array(seq), *arguments,
                   *rows.columns]
        table = pa.Table.from_arrays(columns, schema=self._pending.schema)
        self._pending.replace(pa.concat_tables([self._pending.rows, table]))
        # one timer per (key group, rowtime): the namespace is the key group, so timers
        # dedupe per key group and move with it on a rescaled restore
        self._timers.register(groups, groups.astype(np.int64), ts)
        return []

    def _last_emitted(self, keys: list[pa.Array], num_rows: int) -> np.ndarray:
        """Per row, the last rowtime emitted for its key (int64 min when none was)."""
        stored = self._last.rows
        if not stored.num_rows:
            return np.full(num_rows, np.iinfo(np.int64).min, np.int64)
        ids = row_ids([pa.chunked_array([*stored.column(k).chunks, key], key.type)
                       for k, key in zip(self._keys, keys)], stored.num_rows + num_rows)
        last = np.full(int(ids.max()) + 1, np.iinfo(np.int64).min, np.int64)
        last[ids[:stored.num_rows]] = stored.column("ts").to_numpy()
        return last[ids[stored.num_rows:]]

    def _remember_emitted(self, released: pa.Table) -> None:
        """Make the largest released rowtime of every key its last emitted rowtime."""
        both = pa.concat_tables([self._last.rows,
                                 released.select(self._last.schema.names)
                                 .cast(self._last.schema)])
        ids = row_ids([both.column(k) for k in self._keys], both.num_rows)
        count = int(ids.max()) + 1
        last = np.full(count, np.iinfo(np.int64).min, np.int64)
        np.maximum.at(last, ids, both.column("ts").to_numpy())
        first = first_occurrences(ids, count)
        merged = both.take(pa.array(first))
        self._last.replace(merged.set_column(merged.schema.get_field_index("ts"), "ts",
                                             pa.array(last)))

    # -- time ---------------------------------------------------------------------------

    def _advance(self, watermark: int) -> list[pa.RecordBatch]:
        """Emit every pending row ``watermark`` makes final."""
        if not self._timers.advance(watermark).num_rows:
            if watermark == MAX_WATERMARK:  # nothing can arrive after +infinity
                self._history.replace(self._history.schema.empty_table())
            return []
        ts = self._pending.rows.column("ts").to_numpy()
        released = self._pending.take(ts <= watermark)
        if self._per_key:
            if watermark == MAX_WATERMARK:  # nothing can arrive after +infinity
                self._last.replace(self._last.schema.empty_table())
            else:
                self._remember_emitted(released)
        groups = np.unique(released.column(KEY_GROUP).to_numpy())
        history = self._history.take(self._history.in_key_groups(groups))
        fresh = released.select([KEY_GROUP, *self._keys, "ts", "seq"])
        arguments = [released.column(f"x{j}") if e is not None else None
                     for j, e in enumerate(self._arguments)]
        for field, column in zip(self._contributions,
                                 contributions([None if a is None else a.combine_chunks()
                                                for a in arguments],
                                               self._contributions, released.num_rows,
                                               self._released_user_arguments(released))):
            fresh = fresh.append_column(field, column)
        positions = pa.array(np.arange(released.num_rows, dtype=np.int64))
        fresh = fresh.select(history.column_names).cast(history.schema)
        combined = pa.concat_tables([
            history.append_column(POSITION, pa.array(np.full(history.num_rows, -1, np.int64))),
            fresh.append_column(POSITION, positions)])
        result = evaluate(combined, self._keys, self.node.aggs, self._window,
                          self._history.schema)
        self._store_history(result.history, watermark)
        return self._emit(released, result.order, result.values)

    def _released_user_arguments(self, released: pa.Table) -> dict[int, list[pa.Array]]:
        return {j: [released.column(f"x{j}_{m}").combine_chunks() for m in range(len(args))]
                for j, args in self._user_arguments.items()}

    def _store_history(self, history: pa.Table, watermark: int) -> None:
        if watermark == MAX_WATERMARK:  # nothing can arrive after +infinity
            self._history.replace(self._history.schema.empty_table())
            return
        # partitions without released rows keep their history: lateness is per key, so
        # a row of theirs can still arrive with a rowtime behind the watermark
        rest = self._history.rows
        self._history.replace(pa.concat_tables([rest, history.cast(rest.schema)]))

    def _emit(self, released: pa.Table, order: np.ndarray, values: list[pa.Array]
              ) -> list[pa.RecordBatch]:
        """Released rows with their aggregates, ordered by (rowtime, arrival)."""
        rows = released.take(pa.array(order))
        emit = pa.array(np.lexsort((rows.column("seq").to_numpy(),
                                    rows.column("ts").to_numpy())))
        columns = [rows.column(f"c{i}").take(emit) for i in range(self._width)]
        columns += [conform(v, agg.dtype).take(emit) for v, agg in zip(values, self.node.aggs)]
        table = pa.table(columns, names=[f"c{i}" for i in range(len(columns))])
        return table_to_batches(table, self.node.schema, batch_size(self.context.settings))
