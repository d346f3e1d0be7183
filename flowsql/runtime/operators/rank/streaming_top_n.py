"""Unwindowed Top-N: ``ROW_NUMBER() OVER (PARTITION BY k ORDER BY o)`` kept to ``[lower,
upper]`` over an insert-only stream, with an updating output (Flink's
``AppendOnlyTopNFunction``; ``ORDER BY o LIMIT n OFFSET m`` is the global case, without
partition keys).

Semantics: the result is updated once per input batch, as in Flink's mini-batch mode: the
batch's rows are ranked together with the stored rows of their partitions and the change
of the visible result (rows ranked within ``[lower, upper]``) is emitted, retractions
first, then additions, each in (partition, rank) order:

* without a rank column, a row that left the range is ``-D``, a row that entered is
  ``+I`` (a row that only moved within the range is unchanged);
* with a rank column, a rank position whose row changed emits ``-U(old row, rank)`` and
  ``+U(new row, rank)``; a newly filled position ``+I(row, rank)``, an emptied one
  ``-D(row, rank)``.

Ties in ORDER BY: an incoming row ranks after the stored rows it ties with, and rows of one
batch keep arrival order -- the order Flink's per-record processing gives. Because the
input is insert-only, a row pushed below rank ``upper`` can never come back, so state keeps
only the rows ranked ``1..upper`` of each partition, with their rank (needed for the diff
and for ties). The final result is the same however the input is chunked; the changelog
differs only by the intermediate states a coarser chunking skips.

State time-to-live (``table.exec.state.ttl``): a stored row is written when it enters its
partition's top rows and keeps that time while it stays (Flink writes a Top-N entry when a
row is put into it, not when a row merely keeps its place), so it expires the interval
after it entered; a partition whose rows all expired starts afresh. Expiry emits nothing:
rows downstream stay as they were, as in Flink. A deduplication on processing time is the
Top-1 case: keep-first keeps a key's first row, which expires the interval after it came,
and the key's next row then emits ``+I`` again; keep-last writes every row.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from flowsql.planner.physical_streaming import RankExec
from flowsql.runtime.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.rank import ranking_state
from flowsql.runtime.state.keyed_table import KEY_GROUP
from flowsql.runtime.state.store import StateStore

_RANK = "__rank"


class TopN(Operator):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    def __init__(self, node: RankExec) -> None:
        self.node = node
        self._data_schema = ranking_state.stored_data_schema(node)
        self._state_schema = pa.schema([*self._data_schema, pa.field(_RANK, pa.int64())])

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._partition, self._order = ranking_state.compile_all(self.node)
        self._store = StateStore.for_context(context)
        self._rows = self._store.keyed_table("rows", self._state_schema, expires=True)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        node = self.node
        if not batch.num_rows or node.upper < 1:
            return []
        self._store.expire()
        groups = self._rows.key_groups_of([fn(batch) for fn in self._partition],
                                          batch.num_rows)
        stored, written = self._rows.take_stamped(self._rows.in_key_groups(np.unique(groups)))
        m, n = stored.num_rows, batch.num_rows
        data = ranking_state.concat_batches(ranking_state.as_batch(stored, self._data_schema),
                                     ranking_state.renamed(batch, self._data_schema))
        all_groups = np.concatenate([stored.column(KEY_GROUP).to_numpy(), groups])
        old_rank = np.concatenate([stored.column(_RANK).to_numpy(), np.zeros(n, np.int64)])
        is_new = np.r_[np.zeros(m, np.int64), np.ones(n, np.int64)]
        # ties: stored rows by their rank, then the batch's rows in arrival order
        sequence = np.where(is_new == 1, np.arange(m + n, dtype=np.int64), old_rank)
        ids = ranking_state.partition_ids([fn(data) for fn in self._partition], m + n)
        permutation, numbers = ranking_state.rank(ids, [fn(data) for fn in self._order], node.order,
                                           [(is_new, True), (sequence, True)])
        new_rank = np.empty(m + n, np.int64)
        new_rank[permutation] = numbers
        out = self._changelog(data, ids, old_rank, new_rank, m)
        keep = permutation[numbers <= node.upper]
        written = np.concatenate([written, self._store.ttl.stamps(n)])
        self._rows.append(ranking_state.state_rows(
            all_groups[keep], data.take(pa.array(keep)), [(_RANK, new_rank[keep])],
            self._rows.schema), written[keep])
        return out

    def _changelog(self, data: pa.RecordBatch, ids: np.ndarray, old_rank: np.ndarray,
                   new_rank: np.ndarray, m: int) -> list[pa.RecordBatch]:
        lower, upper = self.node.lower, self.node.upper
        stored = np.arange(len(ids)) < m
        was_visible = stored & (old_rank >= lower) & (old_rank <= upper)
        is_visible = (new_rank >= lower) & (new_rank <= upper)
        if self.node.rank_field is None:
            retract = np.flatnonzero(was_visible & ~is_visible)
            add = np.flatnonzero(is_visible & ~was_visible)
        else:
            unchanged = was_visible & (new_rank == old_rank)
            retract = np.flatnonzero(was_visible & ~unchanged)
            add = np.flatnonzero(is_visible & ~unchanged)
        retract = retract[np.lexsort((old_rank[retract], ids[retract]))]
        add = add[np.lexsort((new_rank[add], ids[add]))]
        if self.node.rank_field is None:
            retract_kinds = np.full(len(retract), DELETE, np.int8)
            add_kinds = np.full(len(add), INSERT, np.int8)
        else:
            # a position is (partition, rank); both are below len(ids) + 1
            width = len(ids) + 1
            before = ids[retract] * width + old_rank[retract]
            after = ids[add] * width + new_rank[add]
            retract_kinds = np.where(np.isin(before, after), UPDATE_BEFORE, DELETE)
            add_kinds = np.where(np.isin(after, before), UPDATE_AFTER, INSERT)
        rows = np.concatenate([retract, add])
        ranks = np.concatenate([old_rank[retract], new_rank[add]])
        kinds = np.concatenate([retract_kinds, add_kinds]).astype(np.int8)
        return ranking_state.output(self.node, data, rows, ranks, kinds)

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)
