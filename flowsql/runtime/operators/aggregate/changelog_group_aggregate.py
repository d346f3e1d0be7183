"""Changelog group aggregate: GROUP BY without windows over a stream (Flink's
``GroupAggFunction``).

Contract: input batches are insert-only or updating (``runtime.changelog``; +I/+U rows
accumulate, -U/-D rows retract); the output is always updating -- group fields, aggregate
fields, ``$row_kind`` -- and materializes to the GROUP BY result of the input seen so far.

Semantics, per input record in arrival order (Flink without mini-batch), after applying the
record to its group:

* the group had no result before (no rows)            -> ``+I(new)``
* the group's row count dropped to 0                  -> ``-D(previous)``, state cleared
* the new result equals the previous one              -> nothing
* otherwise                                           -> ``-U(previous)``, ``+U(new)``

No GROUP BY keys means one group (the first record emits ``+I``); NULL keys form one group.
COUNT(x) skips NULLs, COUNT(*) counts rows, SUM/AVG/MIN/MAX of only NULLs are NULL; result
types follow the plan (SUM of a DECIMAL stays an exact DECIMAL(38, s), AVG is DOUBLE).
A retraction that finds no row to retract (its group has no rows) is an error without
state time-to-live. With ``table.exec.state.ttl`` a group's state expires when the group was
not written for the interval (processing time; every record applied to a group writes it):
the group then starts afresh (its next record emits ``+I``), and a retraction that finds no
row -- its group expired -- is dropped, as Flink drops it. Likewise a retraction of a
DISTINCT/MIN/MAX value its group does not hold (it was added to the expired incarnation)
is ignored for that value.

With ``table.exec.mini-batch.enabled`` = 'true' the operator emits one change per group
per input batch instead: the difference between the group's result before and after the
batch (``+I``, ``-U``/``+U``, ``-D`` or nothing), groups in order of first appearance.

State (all in one ``StateStore``, keyed by the group key's key group):

* ``groups`` -- per group: key hash, key columns, row count and the accumulators of
  COUNT (a count), SUM/AVG (a sum and a count of non-NULL values, so retraction knows when
  the sum is NULL again), VAR_*/STDDEV_* (a float64 sum, sum of squares and count:
  ``kernels.variance``), MIN/MAX (the current extreme) and DISTINCT COUNT/SUM/AVG (the
  count and sum of the values present);
* ``values<i>`` -- per (group, value) a reference count and the pair's hash, for DISTINCT
  aggregates (a value counts while its count is positive) and for MIN/MAX over an input
  that may retract (the multiset a retraction of the current extreme needs; over an
  insert-only input, as the plan node says, the extreme in ``groups`` is all MIN/MAX
  keep).

The previous result of a group is a function of this state, so nothing else is remembered.

Vectorized per batch (``changelog_segments``): the touched groups' rows are taken out of
``groups`` (rows whose key hash occurs in the batch) and, of each values table, the rows of
the batch's (group, value) pairs are read where they are (found by pair hash; only the
pairs a batch touches change, so the cost of a batch does not grow with the values its
groups hold) -- all rows of the touched groups are taken out instead for MIN/MAX in a
retracting batch and under state TTL (``_fetch_values``). Batch and stored keys get common
group ids, and every group becomes one segment "stored state, then its records in order".
Segmented running sums give every record's COUNT/SUM/AVG accumulators (DISTINCT ones sum
the changes of presence of the batch's pairs onto the stored accumulators);
MIN/MAX use one ``maximum.accumulate`` over value ranks offset by segment (insert-only
batches) or, when the batch retracts, the maximum over the intervals during which each
value is present (a vectorized segment tree over the (group, value) reference counts).
The changelog is then a ``take`` of the positions before and after every record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.expressions import render
from flowsql.planner.physical import STREAMING_AGGREGATE_FUNCTIONS
from flowsql.planner.physical_streaming import GroupAggregateExec
from flowsql.planner.schema import to_arrow_schema
from flowsql.runtime.changelog import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    data_columns,
    is_addition,
    row_kinds,
    with_row_kinds,
)
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import batch_size, conform, make_batch
from flowsql.runtime.kernels.variance import VARIANCE_AGGREGATES, variance
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.aggregate import numpy_sums
from flowsql.runtime.operators.aggregate.changelog_segments import (
    Layout,
    first_occurrences,
    interval_max,
    layout,
    row_ids,
    running_best,
    segmented_cumsum,
    value_events,
)
from flowsql.runtime.partitioning import hash_columns, key_groups_of_hashes
from flowsql.runtime.state.keyed_table import KEY_GROUP, KeyedTableState
from flowsql.runtime.state.store import StateStore
from flowsql.runtime.state.ttl import UPDATED_AT

MINI_BATCH = "table.exec.mini-batch.enabled"
_HASH, _PAIR, _COUNT = "__hash", "__pair_hash", "__count"
_SUPPORTED = STREAMING_AGGREGATE_FUNCTIONS


@dataclass(frozen=True)
class _Agg:
    """One aggregate: its family and the types it computes in."""

    index: int
    #: what the accumulator columns are named by: the call as written (``sum(v)``), so a
    #: function added by a query upgrade adds columns and never renames another's
    label: str
    name: str
    distinct: bool          # DISTINCT count/sum/avg (min/max ignore duplicates anyway)
    arg_type: pa.DataType   # NULL-typed arguments compute as int64
    sum_type: pa.DataType   # SUM's result type, AVG's accumulator type
    out_type: pa.DataType
    insert_only: bool = False   # the input never retracts (the plan node says so)

    @property
    def keeps_values(self) -> bool:
        """DISTINCT aggregates keep their values; MIN/MAX keep them only where the input
        may retract (a retraction of the current extreme needs the next one)."""
        return self.distinct or (self.name in ("min", "max") and not self.insert_only)

    def state_fields(self) -> list[pa.Field]:
        """Accumulator columns in the ``groups`` table (a distinct aggregate keeps the
        count, sum or average of the values present, as its non-distinct form does)."""
        a = self.label
        if self.name in ("count", "count_star"):
            return [pa.field(a, pa.int64())]
        if self.name in ("sum", "avg"):
            return [pa.field(f"{a}_sum", self.sum_type), pa.field(f"{a}_n", pa.int64())]
        if self.name in VARIANCE_AGGREGATES:
            return [pa.field(f"{a}_sum", pa.float64()), pa.field(f"{a}_sq", pa.float64()),
                    pa.field(f"{a}_n", pa.int64())]
        return [pa.field(a, self.arg_type)]

    def migration_defaults(self) -> dict[str, Any]:
        """What a group that existed before this function was added starts with: no rows
        counted, no values summed (``state.migration``)."""
        return {f.name: (0 if f.name == self.label and self.name in ("count", "count_star")
                         or f.name.endswith("_n") else None)
                for f in self.state_fields()}


@dataclass(frozen=True)
class _Events:
    """One aggregate's (group, value) reference counts through a batch, per event sorted by
    (pair, position): where it happens, the presence change (+1 a value appears, -1 it
    disappears), the value, the pair's count after it and where the pair next changes (or
    its segment ends); ``rows`` are the (group, value, count) rows to store afterwards."""

    position: np.ndarray
    presence: np.ndarray
    values: pa.Array
    after: np.ndarray
    next_position: np.ndarray
    rows: _ValueRows


@dataclass(frozen=True)
class _ValueRows:
    """One values table's (group, value) pairs after a batch: the pairs present -- group,
    value, count and the fetched stored row each continues (-1 for a new pair) -- and the
    fetched stored rows whose pair is gone."""

    gid: np.ndarray
    values: pa.Array
    counts: np.ndarray
    stored: np.ndarray
    gone: np.ndarray


@dataclass
class _Batch:
    """What every aggregate needs of the batch being processed."""

    sign: np.ndarray                       # +1 accumulate, -1 retract, per record
    retracting: bool
    layout: Layout
    gid: np.ndarray                        # group of every record
    old: pa.Table                          # stored group rows taken out of state
    old_index: np.ndarray                  # per group: its row in ``old`` or -1
    old_values: dict[int, pa.Table]        # stored value rows, per aggregate
    old_values_gid: dict[int, np.ndarray]  # their groups


def _make_aggs(node: GroupAggregateExec) -> list[_Agg]:
    aggs: list[_Agg] = []
    for i, (call, out) in enumerate(zip(node.aggs, node.agg_fields)):
        if call.name not in _SUPPORTED:
            raise ExecutionError(f"streaming GROUP BY does not support {call.name}()")
        if call.filter is not None:
            raise ExecutionError("streaming GROUP BY does not support FILTER (WHERE ...)")
        arg_type = call.args[0].dtype if call.args else pa.int64()
        if pa.types.is_null(arg_type):
            arg_type = pa.int64()
        distinct = call.distinct and call.name in ("count", "sum", "avg")
        sum_type = (T.sum_type(arg_type) if call.name in ("sum", "avg")
                    else pa.float64() if call.name in VARIANCE_AGGREGATES else pa.int64())
        label = render(call)
        taken = sum(1 for agg in aggs if agg.label.split("#")[0] == label)
        label = f"{label}#{taken + 1}" if taken else label
        aggs.append(_Agg(i, label, call.name, distinct, arg_type, sum_type, out.dtype,
                         node.insert_only_input))
    return aggs


class GroupAggregateOperator(Operator):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    def __init__(self, node: GroupAggregateExec) -> None:
        self.node = node
        self._width = len(node.input.schema)
        self._key_types = [f.dtype for f in node.group_fields]
        self._keys = [f"k{i}" for i in range(len(node.group_fields))]
        self._aggs = _make_aggs(node)
        self.output_schema = to_arrow_schema(node.schema)
        key_fields = [pa.field(k, t) for k, t in zip(self._keys, self._key_types)]
        self._group_schema = pa.schema(
            [pa.field(_HASH, pa.uint64()), *key_fields, pa.field(_COUNT, pa.int64())]
            + [f for agg in self._aggs for f in agg.state_fields()])
        self._value_schemas = {
            agg.index: pa.schema([pa.field(_HASH, pa.uint64()), pa.field(_PAIR, pa.uint64()),
                                  *key_fields, pa.field("v", agg.arg_type),
                                  pa.field("n", pa.int64())])
            for agg in self._aggs if agg.keeps_values}

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        self._key_fns = [compile_expr(e, schema) for e in self.node.group_exprs]
        self._arg_fns: list[Callable[[pa.RecordBatch], pa.Array] | None] = [
            compile_expr(call.args[0], schema) if call.args else None
            for call in self.node.aggs]
        self._mini_batch = SettingValues(context.settings).boolean(MINI_BATCH)
        self._batch_size = batch_size(context.settings)
        self._max_parallelism = SettingValues(context.settings).integer("max_parallelism")
        self._store = StateStore.for_context(context, self._max_parallelism)
        self._expiring = self._store.ttl.enabled
        self._groups = self._store.keyed_table(
            "groups", self._group_schema, expires=True, migration_defaults={
                k: v for agg in self._aggs for k, v in agg.migration_defaults().items()})
        self._values: dict[int, KeyedTableState] = {
            i: self._store.keyed_table(f"values {self._aggs[i].label}", schema, expires=True)
            for i, schema in self._value_schemas.items()}

    # -- data ---------------------------------------------------------------------------

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if not batch.num_rows:
            return []
        self._store.expire()
        return self._apply(batch)

    def _apply(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        kinds = row_kinds(batch, self._width)
        data = data_columns(batch, self._width)
        sign = np.where(is_addition(kinds), 1, -1).astype(np.int64)
        n = data.num_rows
        keys = [conform(fn(data), t) for fn, t in zip(self._key_fns, self._key_types)]
        args = [None if fn is None else numpy_sums.as_array(fn(data)) for fn in self._arg_fns]
        args = [None if a is None else conform(_non_null_type(a), agg.arg_type)
                for a, agg in zip(args, self._aggs)]
        hashes = (hash_columns(keys) if keys
                  else np.zeros(n, dtype=np.uint64))

        # take the touched groups out of state and give stored and new rows common ids
        touched = np.unique(hashes)
        old = self._groups.take(_has_hash(self._groups, touched))
        retracting = bool((sign < 0).any())
        # per aggregate keeping values: the stored rows the batch needs and, when they
        # were read in place rather than taken out, their row numbers in the values table
        fetched = {agg.index: self._fetch_values(agg, arg, hashes, touched, retracting)
                   for agg, arg in zip(self._aggs, args) if agg.index in self._values}
        old_values = {i: rows for i, (rows, _) in fetched.items()}
        in_place = {i: at for i, (_, at) in fetched.items() if at is not None}
        parts = [old, None, *old_values.values()]
        sizes = [p.num_rows if p is not None else n for p in parts]
        key_columns = [pa.concat_arrays(
            [numpy_sums.as_array(p.column(k)) if p is not None else keys[j] for p in parts])
            for j, k in enumerate(self._keys)]
        all_hashes = np.concatenate(
            [p.column(_HASH).to_numpy() if p is not None else hashes for p in parts])
        total = int(sum(sizes))
        bounds = np.cumsum([0, *sizes])
        ids = row_ids(key_columns, total)
        ctx, group_keys, group_hashes, count0, running = self._grouping(
            ids, bounds, sign, old, old_values, key_columns, all_hashes)
        lay = ctx.layout
        if (ctx.retracting
                and ((sign < 0) & (running[lay.positions - 1] <= 0)).any()):
            if self._expiring:
                # put the groups back untouched and apply the batch without the
                # retractions that find no row (their group's state expired)
                self._groups.append(old)
                for i, rows in old_values.items():
                    if i not in in_place:
                        self._values[i].append(rows)
                return self._apply(batch.filter(pa.array(_found_rows(count0, sign, lay))))
            raise ExecutionError(
                "GROUP BY received a retraction for a group that has no rows (the input "
                "changelog retracts a row it never added)")
        if self._expiring:
            again = _incarnations(running, lay)
            if again.any():
                # a group emptied within the batch starts afresh after that record, as
                # its state is cleared then: its later records form a new group (with
                # a valid changelog this changes nothing, the emptied group's
                # accumulators being neutral; after expiry they need not be)
                incarnation = np.zeros(total, dtype=np.int64)
                incarnation[bounds[1]:bounds[2]] = again
                ids = row_ids([*key_columns, pa.array(incarnation)], total)
                ctx, group_keys, group_hashes, count0, running = self._grouping(
                    ids, bounds, sign, old, old_values, key_columns, all_hashes)
                lay = ctx.layout

        results: list[pa.Array] = []
        state_columns: dict[str, pa.Array] = {}
        new_values: dict[int, _ValueRows] = {}
        for agg, arg in zip(self._aggs, args):
            result, columns, values = self._aggregate(agg, arg, ctx)
            results.append(result)
            state_columns.update(columns)
            if values is not None:
                new_values[agg.index] = values

        self._store_state(running[lay.lasts], group_keys, group_hashes, state_columns,
                          new_values, in_place)
        if self._mini_batch:
            before, after = self._per_batch_changes(ctx, running)
        else:
            before, after = lay.positions - 1, lay.positions
        return self._changelog(before, after, running, lay, group_keys, results)

    def _fetch_values(self, agg: _Agg, arg: pa.Array | None, hashes: np.ndarray,
                      touched: np.ndarray, retracting: bool
                      ) -> tuple[pa.Table, np.ndarray | None]:
        """The rows of ``agg``'s values table the batch needs, and where they are.

        Usually these are the rows of the batch's (group, value) pairs, whose counts
        change (the group's accumulator in ``groups`` stands for its other values); they
        are read in place and their row numbers returned, so that only changed counts
        are written back. MIN/MAX under retraction needs every value of its touched
        groups (the extreme may leave), and with state time-to-live every value of a
        touched group is written with it: then all rows of the touched groups are taken
        out (row numbers None) and put back after the batch."""
        state = self._values[agg.index]
        if self._expiring or (retracting and agg.name in ("min", "max")):
            return state.take(_has_hash(state, touched)), None
        assert arg is not None  # an aggregate keeping values has an argument
        valid = numpy_sums.valid_mask(arg)
        pairs = _pair_hashes(hashes[valid], arg.filter(pa.array(valid)))
        at = np.flatnonzero(pc.is_in(state.rows.column(_PAIR), value_set=pa.array(
            pairs, pa.uint64())).to_numpy(zero_copy_only=False))
        rows = state.rows.take(pa.array(at))
        # a row whose pair hash merely collides with a batch pair must be one of a touched
        # group, whose ``groups`` row is taken out with it and which writes it back
        # unchanged: the others are left alone
        ours = pc.is_in(rows.column(_HASH), value_set=pa.array(touched, pa.uint64()))
        if not pc.all(ours).as_py():
            rows = rows.filter(ours)
            at = at[ours.to_numpy(zero_copy_only=False)]
        return rows, at

    @staticmethod
    def _grouping(ids: np.ndarray, bounds: np.ndarray, sign: np.ndarray, old: pa.Table,
                  old_values: dict[int, pa.Table], key_columns: list[pa.Array],
                  all_hashes: np.ndarray
                  ) -> tuple[_Batch, list[pa.Array], np.ndarray, np.ndarray, np.ndarray]:
        """For group ids ``ids`` of (stored groups, records, stored values...): the batch
        context, every group's key columns and hash, its stored count and the running
        count at every position."""
        groups = int(ids.max()) + 1 if len(ids) else 0
        gid_old, gid = ids[:bounds[1]], ids[bounds[1]:bounds[2]]
        old_values_gid = {i: ids[bounds[2 + j]:bounds[3 + j]]
                          for j, i in enumerate(old_values)}
        first = first_occurrences(ids, groups)
        group_keys = [c.take(pa.array(first)) for c in key_columns]
        group_hashes = all_hashes[first]

        old_index = np.full(groups, -1, dtype=np.int64)
        old_index[gid_old] = np.arange(len(gid_old))
        lay = layout(gid, groups)
        ctx = _Batch(sign, bool((sign < 0).any()), lay, gid, old, old_index, old_values,
                     old_values_gid)
        count0 = _virtual(ctx, _COUNT, 0)
        running = segmented_cumsum(lay.scatter(count0, sign), lay.starts, lay.sizes)
        return ctx, group_keys, group_hashes, count0, running

    # -- aggregates ---------------------------------------------------------------------

    def _aggregate(self, agg: _Agg, arg: pa.Array | None, ctx: _Batch
                   ) -> tuple[pa.Array, dict[str, pa.Array],
                              _ValueRows | None]:
        """(result at every position, accumulator state columns per group, the values
        table's pairs after the batch)."""
        lay = ctx.layout
        valid = (numpy_sums.valid_mask(arg) if arg is not None
                 else np.ones(len(ctx.sign), dtype=bool))
        a = agg.label
        events = (self._value_events(agg, arg, valid, ctx)
                  if agg.keeps_values and arg is not None else None)
        values = events.rows if events is not None else None
        if agg.name in ("min", "max"):
            assert arg is not None
            if events is None and ctx.retracting:
                raise ExecutionError(
                    "GROUP BY received a retraction, but its plan says the input is "
                    "insert-only (MIN/MAX keep no values to retract)")
            result = self._extreme(agg, arg, ctx, events)
            return result, {a: result.take(pa.array(lay.lasts))}, values
        if events is not None:
            # the stored accumulators at the virtual rows, then +value where a value
            # becomes present and -value where it leaves (the stored values' own events sit
            # at the virtual rows, and the accumulators hold them already)
            virtual = np.zeros(lay.total, dtype=bool)
            virtual[lay.starts] = True
            recorded = ~virtual[events.position]
            event_pos, presence = events.position[recorded], events.presence[recorded]
            none = np.zeros(len(ctx.sign), dtype=np.int64)
            count_column = a if agg.name == "count" else f"{a}_n"
            counts = lay.scatter(_virtual(ctx, count_column, 0), none)
            np.add.at(counts, event_pos, presence)
            n = segmented_cumsum(counts, lay.starts, lay.sizes)
            last = lay.lasts
            if agg.name == "count":
                return pa.array(n), {a: pa.array(n[last])}, values
            stored = _virtual_array(ctx, f"{a}_sum", agg.sum_type)
            stored_numbers, numbers = numpy_sums.numbers(
                [stored, events.values.filter(pa.array(recorded))], agg.sum_type)
            sums = lay.scatter(stored_numbers, none.astype(stored_numbers.dtype))
            np.add.at(sums, event_pos, presence * numbers)
            total = segmented_cumsum(sums, lay.starts, lay.sizes)
            state = {f"{a}_sum": numpy_sums.to_arrow(total[last], n[last] > 0, agg.sum_type),
                     f"{a}_n": pa.array(n[last])}
            return self._sum_result(agg, total, n), state, values
        if agg.name in ("count", "count_star"):
            counts = lay.scatter(_virtual(ctx, a, 0), ctx.sign * valid)
            n = segmented_cumsum(counts, lay.starts, lay.sizes)
            return pa.array(n), {a: pa.array(n[lay.lasts])}, None
        assert arg is not None
        stored = _virtual_array(ctx, f"{a}_sum", agg.sum_type)
        stored_numbers, numbers = numpy_sums.numbers([stored, arg], agg.sum_type)
        contributions = np.where(valid, ctx.sign * numbers, 0).astype(numbers.dtype)
        total = segmented_cumsum(lay.scatter(stored_numbers, contributions),
                                 lay.starts, lay.sizes)
        n = segmented_cumsum(lay.scatter(_virtual(ctx, f"{a}_n", 0), ctx.sign * valid),
                             lay.starts, lay.sizes)
        last = lay.lasts
        state = {f"{a}_sum": numpy_sums.to_arrow(total[last], n[last] > 0, agg.sum_type),
                 f"{a}_n": pa.array(n[last])}
        if agg.name in VARIANCE_AGGREGATES:
            (stored_squares,) = numpy_sums.numbers(
                [_virtual_array(ctx, f"{a}_sq", pa.float64())], pa.float64())
            squares = segmented_cumsum(
                lay.scatter(stored_squares, np.where(valid, ctx.sign * numbers * numbers, 0.0)),
                lay.starts, lay.sizes)
            state[f"{a}_sq"] = pa.array(squares[last], pa.float64())
            return variance(agg.name, n, total, squares), state, None
        return self._sum_result(agg, total, n), state, None

    @staticmethod
    def _sum_result(agg: _Agg, total: np.ndarray, n: np.ndarray) -> pa.Array:
        if agg.name == "sum":
            return numpy_sums.to_arrow(total, n > 0, agg.sum_type)
        some = n > 0
        means = numpy_sums.as_float(total, agg.sum_type) / np.where(some, n, 1)
        return pa.array(means, pa.float64(), mask=~some)

    def _value_events(self, agg: _Agg, arg: pa.Array, valid: np.ndarray, ctx: _Batch
                      ) -> _Events:
        """Reference counts of (group, value) through the batch: stored counts first (at
        the virtual row), then every record with a non-NULL value."""
        lay = ctx.layout
        stored = ctx.old_values[agg.index]
        stored_gid = ctx.old_values_gid[agg.index]
        records = np.flatnonzero(valid)
        event_gid = np.concatenate([stored_gid, ctx.gid[records]])
        event_values = pa.concat_arrays([numpy_sums.as_array(stored.column("v")).cast(agg.arg_type),
                                         arg.take(pa.array(records))])
        position = np.concatenate([lay.starts[stored_gid], lay.positions[records]])
        delta = np.concatenate([numpy_sums.as_array(stored.column("n")).to_numpy(
            zero_copy_only=False).astype(np.int64), ctx.sign[records]])
        pairs = row_ids([pa.array(event_gid), event_values], len(event_gid))
        events = value_events(pairs, position, delta, lay.ends[event_gid])
        if (events.after < 0).any() and not self._expiring:
            raise ExecutionError(
                "GROUP BY received a retraction of a value its group does not hold (the "
                "input changelog retracts a row it never added)")
        presence = (events.after > 0).astype(np.int64) - (events.before > 0)
        # a pair's stored row, if fetched, is its first event (at the virtual row)
        first_order = events.order[np.r_[0, events.last[:-1] + 1]] if len(events.last) \
            else events.last
        from_store = first_order < len(stored_gid)
        present = events.after[events.last] > 0
        keep = events.last[present]
        kept = events.order[keep]
        rows = _ValueRows(event_gid[kept], event_values.take(pa.array(kept)),
                          events.after[keep], np.where(from_store, first_order, -1)[present],
                          first_order[from_store & ~present])
        return _Events(events.position, presence, event_values.take(pa.array(events.order)),
                       events.after, events.next_position, rows)

    def _extreme(self, agg: _Agg, arg: pa.Array, ctx: _Batch, events: _Events | None
                 ) -> pa.Array:
        """MIN/MAX at every position, as the best rank among the values present."""
        lay = ctx.layout
        if not ctx.retracting:
            # insert-only: the stored extreme, then a running best within each segment
            stored = _virtual_array(ctx, agg.label, agg.arg_type)
            candidates = pa.concat_arrays([stored, arg])
            weights = _weights(candidates, agg.name == "min")
            best = running_best(lay.scatter(weights[:len(stored)], weights[len(stored):]),
                                lay.segment)
        else:
            # the best value present at each position: intervals during which each
            # (group, value) has a positive count, weighted by the value's rank
            assert events is not None  # a retracting input keeps its values
            candidates = events.values
            weights = _weights(candidates, agg.name == "min")
            present = events.after > 0
            best = interval_max(events.position[present], events.next_position[present],
                                weights[present], lay.total)
        lookup = np.zeros(int(weights.max(initial=0)) + 1, dtype=np.int64)
        lookup[weights] = np.arange(len(weights))
        return candidates.take(pa.array(lookup[best], mask=best == 0))

    # -- state --------------------------------------------------------------------------

    def _store_state(self, counts: np.ndarray, group_keys: list[pa.Array],
                     group_hashes: np.ndarray, state_columns: dict[str, pa.Array],
                     new_values: dict[int, _ValueRows], in_place: dict[int, np.ndarray]
                     ) -> None:
        """Put the touched groups back (those still holding rows) with their new state;
        value rows read in place (``in_place``: their row numbers per aggregate) get
        their new counts where they are, or are removed when their pair is gone."""
        live = counts > 0
        kept = pa.array(np.flatnonzero(live))
        key_groups = key_groups_of_hashes(group_hashes, self._max_parallelism).astype(np.int32)
        columns: dict[str, pa.Array] = {
            KEY_GROUP: pa.array(key_groups[live]), _HASH: pa.array(group_hashes[live])}
        columns.update({k: c.take(kept) for k, c in zip(self._keys, group_keys)})
        columns[_COUNT] = pa.array(counts[live])
        columns.update({name: c.take(kept) for name, c in state_columns.items()})
        _append(self._groups, pa.table(columns))
        for index, pairs in new_values.items():
            state = self._values[index]
            gid = pairs.gid
            chosen = live[gid]
            at = in_place.get(index)
            if at is not None:
                # counts change in place (before any removal renumbers the rows), pairs
                # gone or of a group gone are removed, new pairs appended below
                stored = pairs.stored >= 0
                update = chosen & stored
                state.update(at[pairs.stored[update]], {"n": pa.array(pairs.counts[update])})
                gone = np.concatenate([pairs.gone, pairs.stored[stored & ~chosen]])
                if len(gone):
                    removed = np.zeros(len(state), dtype=bool)
                    removed[at[gone]] = True
                    state.take(removed)
                chosen &= ~stored
            rows = pa.array(np.flatnonzero(chosen))
            gids = pa.array(gid[chosen])
            table: dict[str, pa.Array] = {
                KEY_GROUP: pa.array(key_groups[gid[chosen]]),
                _HASH: pa.array(group_hashes[gid[chosen]])}
            table.update({k: c.take(gids) for k, c in zip(self._keys, group_keys)})
            table["v"] = pairs.values.take(rows)
            table[_PAIR] = pa.array(_pair_hashes(group_hashes[gid[chosen]], table["v"]))
            table["n"] = pa.array(pairs.counts[chosen])
            _append(state, pa.table(table))

    # -- changelog ----------------------------------------------------------------------

    def _per_batch_changes(self, ctx: _Batch, running: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
        """Mini-batch: every touched group's state before and after the batch, groups in
        order of their first record."""
        lay = ctx.layout
        groups = len(lay.starts)
        first = first_occurrences(ctx.gid, groups)
        order = np.argsort(first, kind="stable")
        order = order[first[order] < len(ctx.gid)]
        return lay.starts[order], lay.lasts[order]

    def _changelog(self, before: np.ndarray, after: np.ndarray, running: np.ndarray,
                   lay: Layout, group_keys: list[pa.Array], results: list[pa.Array]
                   ) -> list[pa.RecordBatch]:
        """The changes that turn the result at ``before`` into the one at ``after``, pair
        by pair in order."""
        had, has = running[before] > 0, running[after] > 0
        same = np.ones(len(before), dtype=bool)
        numbers = [_plain_numbers(result) for result in results]
        for result, plain in zip(results, numbers):
            if plain is not None:
                same &= plain[before] == plain[after]
                continue
            old, new = result.take(pa.array(before)), result.take(pa.array(after))
            equal = pc.fill_null(pc.equal(old, new), False)
            both_null = pc.and_(pc.is_null(old), pc.is_null(new))
            same &= pc.or_(equal, both_null).to_numpy(zero_copy_only=False)
        insert = ~had & has
        delete = had & ~has
        update = had & has & ~same
        emitted = insert.astype(np.int64) + delete + 2 * update
        total = int(emitted.sum())
        if not total:
            return []
        pair = np.repeat(np.arange(len(before)), emitted)
        second = np.arange(total) - np.repeat(np.cumsum(emitted) - emitted, emitted) == 1
        position = np.where(insert[pair] | second, after[pair], before[pair])
        kinds = np.where(insert[pair], INSERT, np.where(
            delete[pair], DELETE, np.where(second, UPDATE_AFTER, UPDATE_BEFORE)))
        taken = pa.array(position)
        groups = pa.array(lay.segment[position])
        columns = ([k.take(groups) for k in group_keys]
                   + [r.take(taken) if plain is None else pa.array(plain[position])
                      for r, plain in zip(results, numbers)])
        out = []
        for start in range(0, total, self._batch_size):
            stop = min(start + self._batch_size, total)
            part = make_batch([c.slice(start, stop - start) for c in columns],
                              self.node.schema, stop - start)
            out.append(with_row_kinds(part, kinds[start:stop].astype(np.int8)))
        return out

    # -- checkpoints --------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(self._values_written_with_groups(state) if self._expiring
                            else state)

    def _values_written_with_groups(self, state: dict[str, pa.Table]) -> dict[str, pa.Table]:
        """The snapshot with every value row's write time set to its group's.

        With time-to-live a group's values are written whenever the group is (they expire
        with it); without, only the pairs a batch touches are, so a snapshot taken without
        time-to-live may hold values older than their group. Restored with time-to-live,
        they take their group's write time first, so that they expire with it (a value row
        without a group row keeps its own)."""
        groups = state.get("keyed/groups")
        if groups is None or UPDATED_AT not in groups.schema.names:
            return state
        out = dict(state)
        for name, table in state.items():
            if (not name.startswith("keyed/values ") or UPDATED_AT not in table.schema.names
                    or any(k not in table.schema.names or k not in groups.schema.names
                           or table.schema.field(k).type != groups.schema.field(k).type
                           for k in self._keys)):
                continue  # a state the restore refuses or migrates: it is judged as it is
            count = groups.num_rows
            keys = [pa.concat_arrays([numpy_sums.as_array(groups.column(k)),
                                      numpy_sums.as_array(table.column(k))])
                    for k in self._keys]
            ids = row_ids(keys, count + table.num_rows)
            written = np.full(int(ids.max(initial=0)) + 1, -1, dtype=np.int64)
            written[ids[:count]] = groups.column(UPDATED_AT).to_numpy()
            own = table.column(UPDATED_AT).to_numpy()
            theirs = written[ids[count:]]
            at = table.schema.get_field_index(UPDATED_AT)
            out[name] = table.set_column(at, table.schema.field(at),
                                         pa.array(np.where(theirs >= 0, theirs, own)))
        return out


def _non_null_type(array: pa.Array) -> pa.Array:
    return array.cast(pa.int64()) if pa.types.is_null(array.type) else array


def _plain_numbers(result: pa.Array) -> np.ndarray | None:
    """``result`` as a numpy array when it holds integers or floats and no NULLs (compared
    and gathered faster there, with the same equality: NaN differs from itself in both),
    else None."""
    kind = result.type
    if result.null_count or not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        return None
    return result.to_numpy(zero_copy_only=False)


def _has_hash(state: KeyedTableState, hashes: np.ndarray) -> np.ndarray:
    """Mask of the stored rows whose group hash is one of ``hashes``: one linear probe
    of the stored column into a hash set of the batch's few hashes (a sort-based
    ``np.isin`` would sort the whole state every batch)."""
    stored = state.rows.column(_HASH)
    found = pc.is_in(stored, value_set=pa.array(hashes, stored.type))
    return found.to_numpy(zero_copy_only=False)


def _pair_hashes(group_hashes: np.ndarray, values: pa.Array) -> np.ndarray:
    """The hash of every (group, value) pair: equal pairs hash equal, so the stored rows of
    a batch's pairs are found by hash (and told apart exactly by ``row_ids``)."""
    return hash_columns([pa.array(group_hashes, pa.uint64()), values])


def _append(state: KeyedTableState, rows: pa.Table) -> None:
    """Add ``rows`` (written now: every touched group is written, as in Flink, even when
    its result did not change)."""
    state.append(rows)


def _found_rows(count0: np.ndarray, sign: np.ndarray, lay: Layout) -> np.ndarray:
    """Per record (in batch order): False for a retraction that finds its group without
    rows once the earlier such retractions are dropped.

    Dropping a retraction at count 0 keeps the count at 0, so the count is the running sum
    reflected at 0: ``x_t = S_t - min(0, min_{k<=t} S_k)`` for the unreflected running sum
    ``S`` that starts at the stored count. A retraction is dropped exactly when ``x`` is 0
    before it."""
    running = segmented_cumsum(lay.scatter(count0, sign), lay.starts, lay.sizes)
    low = _segmented_running_min(running, lay.segment)
    reflected = running - np.minimum(low, 0)
    return ~((sign < 0) & (reflected[lay.positions - 1] == 0))


def _incarnations(running: np.ndarray, lay: Layout) -> np.ndarray:
    """Per record: how many earlier records of its group in the batch left the group
    without rows (0 for all records of a group never emptied before its last record)."""
    emptied = np.zeros(lay.total, dtype=np.int64)
    emptied[lay.positions] = running[lay.positions] == 0
    return segmented_cumsum(emptied, lay.starts, lay.sizes)[lay.positions - 1]


def _segmented_running_min(values: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """Running minimum of ``values`` within each run of equal, non-decreasing ``segment``:
    every segment is shifted below all earlier ones so that one global running minimum
    restarts at each segment."""
    if not len(values):
        return values
    width = int(values.max() - values.min()) + 1
    shift = segment.astype(np.int64) * width
    return np.minimum.accumulate(values - shift) + shift


def _virtual(ctx: _Batch, column: str, default: int) -> np.ndarray:
    """Per group: an int64 column of its stored row, ``default`` for new groups."""
    out = np.full(len(ctx.old_index), default, dtype=np.int64)
    stored = ctx.old_index >= 0
    values = numpy_sums.as_array(ctx.old.column(column)).to_numpy(zero_copy_only=False)
    out[stored] = values[ctx.old_index[stored]]
    return out


def _virtual_array(ctx: _Batch, column: str, dtype: pa.DataType) -> pa.Array:
    """Per group: the value of its stored row (NULL for new groups), as ``dtype``."""
    stored = numpy_sums.as_array(ctx.old.column(column))
    if not pa.types.is_null(stored.type) and not stored.type.equals(dtype):
        stored = stored.cast(dtype)
    index = pa.array(ctx.old_index, mask=ctx.old_index < 0)
    return stored.take(index).cast(dtype)


def _weights(values: pa.Array, smallest_best: bool) -> np.ndarray:
    """A positive int64 per non-NULL value, larger for better values (0 for NULL), so a
    maximum over weights picks MAX (or MIN when ``smallest_best``)."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    ranks = pc.rank(values, sort_keys="ascending", tiebreaker="dense").to_numpy(
        zero_copy_only=False).astype(np.int64)
    valid = numpy_sums.valid_mask(values)
    if not valid.any():
        return np.zeros(len(values), dtype=np.int64)
    if smallest_best:
        ranks = int(ranks[valid].max()) + 1 - ranks
    return np.where(valid, ranks, 0)
