"""Regular (unbounded) streaming join with retractions: Flink's ``StreamingJoinOperator``.

Contract. Input 0 is the left input, input 1 the right one; either may be updating (its
batches then carry ``$row_kind``, checked per batch). ``+I``/``+U`` rows accumulate,
``-U``/``-D`` rows retract. The output is insert-only when the node says it is not
updating (an inner join of insert-only inputs); otherwise every emitted batch carries
``$row_kind`` and holds only ``+I`` and ``-D`` rows, as Flink's join emits.

Semantics, per input row in arrival order (the other side's stored rows that match it --
equal non-NULL keys and a true residual -- are its *matches*, each counted with its
multiplicity):

* accumulate: store the row; emit ``+I(row, match)`` per match. If the row's side is outer
  and it has no match, emit ``+I(row, NULLs)``. If the other side is outer, every match
  that had no partner so far first emits ``-D(NULLs, match)``: it is no longer alone. All
  those padded retractions come before the joined rows of the input row.
* retract: remove one copy of the row from state; emit ``-D(row, match)`` per match, or
  ``-D(row, NULLs)`` when its side is outer and it has no match. If the other side is
  outer, every match that loses its last partner then emits ``+I(NULLs, match)``.

Each side's state is a multiset: one stored row per distinct row, with its count
(``$count``) and, for the outer-join transitions, its current number of matches on the
other side (``$matches``, counted with multiplicity). Retracting a row that is not stored
still emits (as Flink does) and leaves state unchanged; counts are net per batch, so a
valid changelog (never retracting before adding) gives exactly the one-at-a-time result.
Rows with a NULL key can never match anything and are not stored at all: their output
(a padded row for an outer side) needs no state.

Vectorized per batch. Rows of one batch come from one side, so they do not change the
stored rows they are matched against; processing them "one at a time" only matters for
the other side's match counts, which is a running sum per matched stored row in input
order (``_running``). The batch joins the other side's state once (one Acero hash join
of key columns, then the residual); every output row is then described by (input row,
phase, stored row, kind, multiplicity) and one sort puts them in Flink's order: by input
row, then phase (padded retractions before joined accumulations; joined retractions
before padded re-insertions), then stored-row order. Stored rows keep insertion order,
which is the order matches are emitted in. Applying a batch to its own side's multiset
finds the stored rows equal to batch rows among those with the same full-row hash (the
side's row hashes are kept next to its rows) and compares whole rows there
(``changelog.row_ids``). Without state TTL,
state grows with the number of distinct rows, as an unbounded join's state does in Flink.

State time-to-live (``table.exec.state.ttl``): a stored row expires when it was not written
for the interval (processing time), and an expired row no longer matches (it is dropped
before the batch is joined). A row is written when it is stored and whenever its count
changes (the same row accumulated or retracted again), and, on an outer side, when its
number of matches changes -- the writes Flink's join state views make. Merely matching a
row of the other side of an inner join reads it and does not keep it alive.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.physical_streaming import StreamJoinExec
from flowsql.runtime.changelog import (
    DELETE,
    INSERT,
    data_columns,
    is_addition,
    row_ids,
    row_kinds,
    with_row_kinds,
)
from flowsql.runtime.kernels.batches import positional
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.join.join_condition import JoinCondition
from flowsql.runtime.operators.join.side_state import assemble, both_sides
from flowsql.runtime.partitioning import hash_columns
from flowsql.runtime.state.store import StateStore

COUNT, MATCHES = "$count", "$matches"
_BOOKKEEPING = (pa.field(COUNT, pa.int64(), nullable=False),
                pa.field(MATCHES, pa.int64(), nullable=False))
KINDS = ("inner", "left", "right", "full")


class StreamJoinOperator(Operator):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    def __init__(self, node: StreamJoinExec) -> None:
        if node.kind not in KINDS:
            raise ExecutionError(f"streaming join: unsupported join kind {node.kind!r}")
        if node.kind != "inner" and not node.updating:
            raise ExecutionError(f"streaming {node.kind} join must produce an updating output")
        self.node = node
        self._outer = (node.kind in ("left", "full"), node.kind in ("right", "full"))
        self._widths = (len(node.left.schema), len(node.right.schema))

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        node = self.node
        self._condition = JoinCondition(node.left.schema, node.right.schema, node.left_keys,
                                        node.right_keys, node.residual)
        self._store = StateStore.for_context(context)
        types = self._condition.key_types
        self._sides = both_sides(self._store, node.left.schema, node.right.schema, types,
                                 _BOOKKEEPING, expires=True)
        # per side: (the rows, their full-row hashes) while the rows are unchanged
        self._row_hashes: list[tuple[pa.Table, np.ndarray] | None] = [None, None]
        self._hashable = [True, True]

    # -- data ---------------------------------------------------------------------------

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if not batch.num_rows:
            return []
        self._store.expire()
        width = self._widths[input]
        adds = is_addition(row_kinds(batch, width))
        data = data_columns(batch, width)
        if not self.node.updating and not adds.all():
            raise ExecutionError("streaming inner join planned as insert-only received a "
                                 "retraction")
        keys = self._condition.keys(input, data)
        other = self._sides[1 - input]
        stored = other.rows
        rows, matches = self._matches(input, data, keys, stored)
        multiplicity = stored.column(COUNT).to_numpy()[matches]
        out = self._changes(input, data, adds, stored, rows, matches, multiplicity)
        if self._outer[1 - input] and len(rows):
            counts = stored.column(MATCHES).to_numpy().copy()
            np.add.at(counts, matches, np.where(adds[rows], 1, -1))
            written = other.updated_at.copy()
            written[matches] = self._store.ttl.now
            other.replace(stored.set_column(stored.schema.get_field_index(MATCHES),
                                            MATCHES, pa.array(counts)), written)
            cached = self._row_hashes[1 - input]
            if cached is not None and cached[0] is stored:  # same rows, same order
                self._row_hashes[1 - input] = (other.rows, cached[1])
        per_row = np.bincount(rows, weights=multiplicity, minlength=data.num_rows)
        self._store_rows(input, data, keys, adds, per_row.astype(np.int64))
        return out

    def _matches(self, input: int, data: pa.RecordBatch, keys: list[pa.Array],
                 stored: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """Pairs (batch row, stored row of the other side) meeting the join condition,
        ordered by batch row then stored row."""
        other = self._sides[1 - input]
        batch_table = positional(data.columns, data.num_rows)
        if input == 0:
            lid, rid = self._condition.key_pairs(keys, data.num_rows, other.keys(stored),
                                                 stored.num_rows)
            lid, rid = self._condition.residual(batch_table, other.data(stored), lid, rid)
            rows, matches = lid, rid
        else:
            lid, rid = self._condition.key_pairs(other.keys(stored), stored.num_rows, keys,
                                                 data.num_rows)
            lid, rid = self._condition.residual(other.data(stored), batch_table, lid, rid)
            rows, matches = rid, lid
        order = np.lexsort((matches, rows))
        return rows[order], matches[order]

    def _changes(self, input: int, data: pa.RecordBatch, adds: np.ndarray, stored: pa.Table,
                 rows: np.ndarray, matches: np.ndarray, multiplicity: np.ndarray
                 ) -> list[pa.RecordBatch]:
        """The output of the batch in Flink's order (see the module docstring)."""
        pair_adds = adds[rows]
        # (input row, phase, stored row, batch index, stored index, kind, multiplicity)
        parts = [(rows, np.where(pair_adds, 1, 0), matches, rows, matches,
                  np.where(pair_adds, INSERT, DELETE), multiplicity)]
        if self._outer[1 - input] and len(rows):
            before = _running(stored.column(MATCHES).to_numpy()[matches], rows, matches,
                              np.where(pair_adds, 1, -1))
            alone = (pair_adds & (before == 0)) | (~pair_adds & (before == 1))
            p = np.flatnonzero(alone)
            parts.append((rows[p], np.where(pair_adds[p], 0, 1), matches[p],
                          np.full(len(p), -1), matches[p],
                          np.where(pair_adds[p], DELETE, INSERT), multiplicity[p]))
        if self._outer[input]:
            lonely = np.flatnonzero(np.bincount(rows, minlength=data.num_rows) == 0)
            parts.append((lonely, np.zeros(len(lonely)), np.full(len(lonely), -1), lonely,
                          np.full(len(lonely), -1), np.where(adds[lonely], INSERT, DELETE),
                          np.ones(len(lonely), np.int64)))
        row, phase, position, own, others, kinds, repeat = (
            np.concatenate([np.asarray(part[f]) for part in parts]) for f in range(7))
        if not len(row):
            return []
        order = np.lexsort((position, phase, row))
        picks = np.repeat(order, repeat[order].astype(np.int64))
        own, others = own[picks].astype(np.int64), others[picks].astype(np.int64)
        batch_table = positional(data.columns, data.num_rows)
        other_table = self._sides[1 - input].data(stored)
        left, right = (batch_table, other_table) if input == 0 else (other_table, batch_table)
        lid, rid = (own, others) if input == 0 else (others, own)
        out = assemble(self.node.schema, left, right, lid, rid)
        if not self.node.updating:
            return [out]
        return [with_row_kinds(out, kinds[picks].astype(np.int8))]

    # -- state --------------------------------------------------------------------------

    def _store_rows(self, input: int, data: pa.RecordBatch, keys: list[pa.Array],
                    adds: np.ndarray, matches: np.ndarray) -> None:
        """Apply the batch's accumulations and retractions to its side's multiset."""
        side = self._sides[input]
        take = np.flatnonzero(~JoinCondition.null_keys(keys, data.num_rows))
        if not len(take):
            return
        fresh = side.new_rows(keys, data, take,
                              [pa.array(np.where(adds[take], 1, -1), pa.int64()),
                               pa.array(matches[take], pa.int64())])
        stored = side.rows
        candidates, hashes = self._candidates(input, fresh, stored)
        if hashes is not None and not len(candidates) and _distinct(hashes[1]):
            # no stored row and no other batch row equals a batch row
            ids = np.arange(fresh.num_rows, dtype=np.int64)
        else:
            both = pa.concat_tables([stored.take(pa.array(candidates, pa.int64())), fresh])
            ids = row_ids(both.select(side.data_names))
        stored_ids, batch_ids = ids[:len(candidates)], ids[len(candidates):]
        delta = fresh.column(COUNT).to_numpy()
        net = np.bincount(batch_ids, weights=delta, minlength=len(ids)).astype(np.int64)
        known = np.zeros(len(ids), dtype=bool)
        known[stored_ids] = True
        distinct, first = np.unique(batch_ids, return_index=True)
        new = np.sort(first[~known[distinct]])
        new = new[net[batch_ids[new]] > 0]
        added = fresh.take(pa.array(new, pa.int64()))
        added = added.set_column(added.schema.get_field_index(COUNT), COUNT,
                                 pa.array(net[batch_ids[new]], pa.int64()))
        kept = stored
        live = np.ones(stored.num_rows, dtype=bool)  # stored counts are always positive
        if len(candidates):  # only candidates change their counts
            counts = stored.column(COUNT).to_numpy().copy()
            counts[candidates] += net[stored_ids]
            kept = stored.set_column(stored.schema.get_field_index(COUNT), COUNT,
                                     pa.array(counts))
            live = counts > 0
            if not live.all():
                kept = kept.filter(pa.array(live))
        side.replace(pa.concat_tables([kept, added.cast(kept.schema)]),
                     self._written(side.updated_at, candidates, len(ids), stored_ids,
                                   batch_ids, live, len(new)))
        if hashes is not None:
            stored_hashes, fresh_hashes = hashes
            self._row_hashes[input] = (side.rows, np.concatenate(
                [stored_hashes[live], fresh_hashes[new]]))

    def _candidates(self, input: int, fresh: pa.Table, stored: pa.Table
                    ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        """The stored rows of side ``input`` that may equal a row of ``fresh``, ascending,
        and (hashes of the stored rows, hashes of ``fresh``) when rows can be hashed.

        Equal rows have equal full-row hashes (``partitioning.hash_columns`` of the data
        columns), so the stored rows whose hash some fresh row has are all the candidates:
        usually none, where the rows with the same join key can be a large part of the
        state (q7 joins on a price). The stored rows' hashes are kept aligned with the
        side's rows and only recomputed when the rows were replaced elsewhere (expiry, a
        restore). Columns without a hash fall back to the rows with the same key."""
        side = self._sides[input]
        if self._hashable[input]:
            try:
                fresh_hashes = hash_columns(side.data(fresh).columns)
            except ExecutionError:
                self._hashable[input] = False
            else:
                stored_hashes = self._stored_hashes(input, stored)
                found = pc.is_in(pa.array(stored_hashes), value_set=pa.array(fresh_hashes))
                candidates = np.flatnonzero(found.to_numpy(zero_copy_only=False))
                return candidates, (stored_hashes, fresh_hashes)
        # only stored rows with the key of some batch row can equal a batch row
        if self._condition.key_types:
            _, same_key = self._condition.key_pairs(side.keys(fresh), fresh.num_rows,
                                                    side.keys(stored), stored.num_rows)
            return np.unique(same_key), None
        return np.arange(stored.num_rows), None

    def _stored_hashes(self, input: int, stored: pa.Table) -> np.ndarray:
        """Full-row hashes of ``stored``, the rows of side ``input``."""
        cached = self._row_hashes[input]
        if cached is not None and cached[0] is stored:
            return cached[1]
        hashes = (hash_columns(self._sides[input].data(stored).columns) if stored.num_rows
                  else np.empty(0, np.uint64))
        self._row_hashes[input] = (stored, hashes)
        return hashes

    def _written(self, updated_at: np.ndarray, candidates: np.ndarray, ids: int,
                 stored_ids: np.ndarray, batch_ids: np.ndarray, live: np.ndarray,
                 added: int) -> np.ndarray:
        """Write times of the side's rows after the batch (the kept stored rows, then
        ``added`` new ones): now for a stored row some batch row equals (its count was
        written) and for new rows, unchanged for the others."""
        now = self._store.ttl.now
        hit = np.zeros(ids, dtype=bool)
        hit[batch_ids] = True
        stamps = updated_at.copy()
        stamps[candidates[hit[stored_ids]]] = now
        return np.concatenate([stamps[live], np.full(added, now, dtype=np.int64)])

    # -- checkpoints --------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)


def _distinct(values: np.ndarray) -> bool:
    return len(np.unique(values)) == len(values)


def _running(start: np.ndarray, rows: np.ndarray, groups: np.ndarray,
             deltas: np.ndarray) -> np.ndarray:
    """Per pair, the value of its group's counter just before the pair is applied, when
    the counter starts at ``start`` and pairs apply ``deltas`` in the order of ``rows``."""
    order = np.lexsort((rows, groups))
    sorted_groups, sorted_deltas = groups[order], deltas[order]
    exclusive = np.cumsum(sorted_deltas) - sorted_deltas
    first = np.r_[True, sorted_groups[1:] != sorted_groups[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    before = np.empty(len(order), dtype=np.int64)
    before[order] = start[order] + exclusive - exclusive[group_start]
    return before
