"""Changelog group aggregate with user-defined aggregates: GROUP BY without windows over a
stream, when the GROUP BY calls class-form user aggregates (``planner.udf_accumulator``).

The same contract as ``changelog_group_aggregate`` (input insert-only or updating, output
updating: group fields, aggregate fields, ``$row_kind``, materializing to the GROUP BY of
the input seen so far), with one difference: changes are emitted per group and input
batch -- the difference between the group's result before and after the batch
(``+I``, ``-U``/``+U``, ``-D`` or nothing), groups in order of their first record, as
``table.exec.mini-batch.enabled`` does for the built-in operator. The user's methods are
vectorized: per touched group and batch, one ``accumulate`` call with the group's added
rows (+I, +U) and then one ``retract`` call with its retracted rows (-U, -D), so a
retraction of a row added in the same batch finds it. The planner admits a function
without ``retract`` only over an insert-only input. Built-in COUNT, COUNT(*), SUM and AVG
beside the user aggregates run as accumulators of the same shape (``row_accumulators``).

State (one ``StateStore`` keyed table ``groups``, by the group key's key group): per group
its key hash, key columns, row count and one accumulator per aggregate as JSON text, so a
checkpoint holds data, never pickled objects. A retraction that finds no row in its group
is an error without state time-to-live; with ``table.exec.state.ttl`` the group expired,
and its retractions are dropped (as Flink drops them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.expressions import AggCall
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
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.aggregate.changelog_segments import first_occurrences, row_ids
from flowsql.runtime.operators.aggregate.row_accumulators import ROW_ACCUMULATORS, RowAccumulator
from flowsql.runtime.partitioning import hash_columns, key_groups_of_hashes
from flowsql.runtime.state.keyed_table import KEY_GROUP
from flowsql.runtime.state.store import StateStore
from flowsql.runtime.user_functions.accumulator import UserAccumulator

__all__ = ["UserGroupAggregateOperator", "group_aggregate_operator"]

_HASH, _COUNT = "__hash", "__count"
Where = Callable[[], str]


class _Accumulating(Protocol):
    def create(self, where: Where) -> Any: ...
    def accumulate(self, acc: Any, arrays: Sequence[pa.Array], where: Where) -> Any: ...
    def retract(self, acc: Any, arrays: Sequence[pa.Array], where: Where) -> Any: ...
    def value(self, acc: Any, where: Where) -> pa.Scalar: ...
    def encode(self, acc: Any, where: Where) -> str: ...
    def decode(self, text: str) -> Any: ...


def group_aggregate_operator(node: GroupAggregateExec) -> Operator:
    """The operator of a streaming GROUP BY: this module's when it calls a user aggregate,
    the vectorized built-in one (``changelog_group_aggregate``) otherwise."""
    if any(a.function is not None for a in node.aggs):
        return UserGroupAggregateOperator(node)
    from flowsql.runtime.operators.aggregate.changelog_group_aggregate import (
        GroupAggregateOperator,
    )
    return GroupAggregateOperator(node)


def _accumulating(call: AggCall) -> _Accumulating:
    if call.function is not None:
        if not call.function.accumulator:
            raise ExecutionError(f"streaming GROUP BY cannot compute the user-defined "
                                 f"aggregate {call.name}: it has no accumulator class")
        return UserAccumulator(call.function)
    if call.name not in ROW_ACCUMULATORS or call.distinct or call.filter is not None:
        raise ExecutionError(f"streaming GROUP BY with user-defined aggregates cannot compute "
                             f"{call.name}() beside them")
    return RowAccumulator(call)


class UserGroupAggregateOperator(Operator):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    def __init__(self, node: GroupAggregateExec) -> None:
        self.node = node
        self._width = len(node.input.schema)
        self._key_types = [f.dtype for f in node.group_fields]
        self._keys = [f"k{i}" for i in range(len(node.group_fields))]
        self._calls = [_accumulating(a) for a in node.aggs]
        self._names = [f.name for f in node.group_fields]
        self.output_schema = to_arrow_schema(node.schema)
        self._state_schema = pa.schema(
            [pa.field(_HASH, pa.uint64()),
             *(pa.field(k, t) for k, t in zip(self._keys, self._key_types)),
             pa.field(_COUNT, pa.int64()),
             *(pa.field(f"acc{i}", pa.string()) for i in range(len(node.aggs)))])

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        self._key_fns = [compile_expr(e, schema) for e in self.node.group_exprs]
        # COUNT(*) counts the rows of a column of TRUE
        self._arg_fns = [[compile_expr(a, schema) for a in call.args] or [_rows_column]
                         for call in self.node.aggs]
        self._batch_size = batch_size(context.settings)
        self._max_parallelism = SettingValues(context.settings).integer("max_parallelism")
        self._store = StateStore.for_context(context, self._max_parallelism)
        self._expiring = self._store.ttl.enabled
        self._groups = self._store.keyed_table("groups", self._state_schema, expires=True)

    # -- data ---------------------------------------------------------------------------

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if not batch.num_rows:
            return []
        self._store.expire()
        kinds = row_kinds(batch, self._width)
        data = data_columns(batch, self._width)
        n = data.num_rows
        keys = [conform(fn(data), t) for fn, t in zip(self._key_fns, self._key_types)]
        hashes = hash_columns(keys) if keys else np.zeros(n, dtype=np.uint64)
        retracted = ~is_addition(kinds)

        # the touched groups' stored rows, and common group ids for stored and new rows
        stored = self._groups.take(_has_hash(self._groups.rows.column(_HASH), np.unique(hashes)))
        columns = [pa.concat_arrays([_plain(stored.column(k)), key])
                   for k, key in zip(self._keys, keys)]
        total = stored.num_rows + n
        ids = row_ids(columns, total) if columns else np.zeros(total, dtype=np.int64)
        groups = int(ids.max()) + 1
        stored_row = np.full(groups, -1, dtype=np.int64)
        stored_row[ids[:stored.num_rows]] = np.arange(stored.num_rows)
        gid = ids[stored.num_rows:]
        first = first_occurrences(ids, groups)
        all_hashes = np.concatenate([stored.column(_HASH).to_numpy(), hashes])

        # the batch's rows grouped: per group its additions, then its retractions
        order = np.lexsort((np.arange(n), retracted, gid))
        taken = pa.array(order)
        args = [[fn(data).take(taken) for fn in fns] for fns in self._arg_fns]
        sorted_gid, sorted_retracted = gid[order], retracted[order]
        bounds = np.flatnonzero(np.diff(sorted_gid)) + 1
        starts = np.concatenate([[0], bounds])
        stops = np.concatenate([bounds, [n]])
        adds_end = starts + np.add.reduceat((~sorted_retracted).astype(np.int64), starts)
        batch_first = first_occurrences(gid, groups)
        visit = np.argsort(batch_first[sorted_gid[starts]], kind="stable")

        counts = stored.column(_COUNT).to_pylist()
        accs = [stored.column(f"acc{i}").to_pylist() for i in range(len(self._calls))]
        changes: list[tuple[int, int, list[Any]]] = []  # (kind, group, values)
        kept_groups: list[int] = []
        kept_counts: list[int] = []
        kept_accs: list[list[str]] = [[] for _ in self._calls]
        for segment in visit.tolist():
            start, middle, stop = int(starts[segment]), int(adds_end[segment]), int(stops[segment])
            group = int(sorted_gid[start])
            where = self._describe(columns, int(first[group]))
            row = int(stored_row[group])
            count = counts[row] if row >= 0 else 0
            added, removed = middle - start, stop - middle
            if removed > count + added:
                if not self._expiring:
                    raise ExecutionError(
                        "GROUP BY received a retraction for a group that has no rows (the "
                        f"input changelog retracts a row it never added): {where()}")
                stop, removed = middle, 0  # the group expired: its retractions are dropped
            before = after = None
            new_accs = []
            for i, call in enumerate(self._calls):
                acc = call.decode(accs[i][row]) if row >= 0 else call.create(where)
                if count:
                    before = (before or []) + [call.value(acc, where).as_py()]
                if added:
                    acc = call.accumulate(acc, [a.slice(start, added) for a in args[i]], where)
                if removed:
                    acc = call.retract(acc, [a.slice(middle, removed) for a in args[i]], where)
                new_accs.append(acc)
            count += added - removed
            if count:
                after = [call.value(acc, where).as_py() for call, acc in zip(self._calls,
                                                                             new_accs)]
                kept_groups.append(group)
                kept_counts.append(count)
                for i, (call, acc) in enumerate(zip(self._calls, new_accs)):
                    kept_accs[i].append(call.encode(acc, where))
            if before is None and after is not None:
                changes.append((INSERT, group, after))
            elif before is not None and after is None:
                changes.append((DELETE, group, before))
            elif before is not None and after is not None and before != after:
                changes.append((UPDATE_BEFORE, group, before))
                changes.append((UPDATE_AFTER, group, after))

        self._store_groups(columns, all_hashes, first, kept_groups, kept_counts, kept_accs)
        return self._changelog(columns, first, changes)

    def _describe(self, columns: list[pa.Array], position: int) -> Where:
        def where() -> str:
            if not columns:
                return "the whole input"
            values = ", ".join(f"{n} = {c[position].as_py()!r}"
                               for n, c in zip(self._names, columns))
            return f"the group ({values})"
        return where

    def _store_groups(self, columns: list[pa.Array], hashes: np.ndarray, first: np.ndarray,
                      groups: list[int], counts: list[int], accs: list[list[str]]) -> None:
        if not groups:
            return
        rows = first[np.array(groups, dtype=np.int64)]
        taken = pa.array(rows)
        group_hashes = hashes[rows]
        table: dict[str, Any] = {
            KEY_GROUP: pa.array(key_groups_of_hashes(group_hashes, self._max_parallelism)
                                .astype(np.int32)),
            _HASH: pa.array(group_hashes, pa.uint64())}
        table.update({k: c.take(taken) for k, c in zip(self._keys, columns)})
        table[_COUNT] = pa.array(counts, pa.int64())
        table.update({f"acc{i}": pa.array(a, pa.string()) for i, a in enumerate(accs)})
        self._groups.append(pa.table(table))

    def _changelog(self, columns: list[pa.Array], first: np.ndarray,
                   changes: list[tuple[int, int, list[Any]]]) -> list[pa.RecordBatch]:
        if not changes:
            return []
        kinds = np.array([c[0] for c in changes], dtype=np.int8)
        positions = pa.array(first[np.array([c[1] for c in changes], dtype=np.int64)])
        out_columns = [c.take(positions) for c in columns]
        for i, field in enumerate(self.node.agg_fields):
            out_columns.append(pa.array([c[2][i] for c in changes], field.dtype))
        out = []
        total = len(changes)
        for start in range(0, total, self._batch_size):
            stop = min(start + self._batch_size, total)
            part = make_batch([c.slice(start, stop - start) for c in out_columns],
                              self.node.schema, stop - start)
            out.append(with_row_kinds(part, kinds[start:stop]))
        return out

    # -- checkpoints --------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)


def _rows_column(batch: pa.RecordBatch) -> pa.Array:
    return pa.array(np.ones(batch.num_rows, dtype=bool))


def _plain(column: pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if column.num_chunks else pa.array([], column.type)


def _has_hash(stored: pa.ChunkedArray, hashes: np.ndarray) -> np.ndarray:
    """Mask of the stored rows whose group hash is one of ``hashes``."""
    found = pc.is_in(stored, value_set=pa.array(hashes, stored.type))
    return found.to_numpy(zero_copy_only=False)
