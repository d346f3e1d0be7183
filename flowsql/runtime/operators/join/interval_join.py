"""Event-time interval join: Flink's ``TimeIntervalJoin`` (rowtime).

Contract. Input 0 is the left input, input 1 the right one; both are insert-only (an
updating batch is an error). A left row ``l`` and a right row ``r`` join when their keys
are equal and not NULL, ``lt + lower_ms <= rt <= lt + upper_ms`` holds for their rowtimes
(``left_time``, ``right_time``, in epoch milliseconds) and the residual is true. The output
is insert-only for every join kind: an outer row is padded with NULLs only once it can no
longer be matched, so a padded row is never retracted.

Semantics. Rows that arrive later than the watermark are not dropped; they join whatever is
still buffered, as in Flink. Event time rules out future partners:

* a buffered left row with time ``lt`` can only meet right rows ``rt <= lt + upper_ms``; it
  expires when the watermark reaches ``lt + upper_ms``;
* a buffered right row with time ``rt`` can only meet left rows ``lt >= rt - lower_ms``; it
  expires when the watermark reaches ``rt - lower_ms``.

Per batch (rows of one side, processed as if one at a time; rows of one side never meet
each other, so their order only fixes the output order): every row joins the other side's
buffered rows, emitting the joined rows in input order, matches in buffer order; buffered
rows that matched are marked. Rows that may still meet future rows of the other side are
buffered (with their matched flag); a row that is already expired on arrival, or has a
NULL key, is not stored -- and if its side is outer and it found no buffered partner it is
emitted padded at once. When the watermark advances, expired rows leave state; those of an
outer side that never matched are emitted padded, ordered by expiry time then arrival.

State: one keyed table per side (key columns, data columns, rowtime, matched flag, row id)
and one timer per buffered row in the timer service (namespace: the row id, timestamp: its
expiry), so a watermark that expires nothing touches no state. The watermark and the row
id counter go to union list state on snapshot (restored as minimum and maximum).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.physical_streaming import IntervalJoinExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import positional
from flowsql.runtime.kernels.epoch_millis import epoch_millis
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.join.event_time_join import EventTimeJoin
from flowsql.runtime.operators.join.join_condition import JoinCondition
from flowsql.runtime.operators.join.side_state import assemble
from flowsql.runtime.state.keyed_table import KEY_GROUP

TIME, MATCHED, ROW_ID = "$time", "$matched", "$row_id"
_BOOKKEEPING = (pa.field(TIME, pa.int64(), nullable=False),
                pa.field(MATCHED, pa.bool_(), nullable=False),
                pa.field(ROW_ID, pa.int64(), nullable=False))
_ID_SHIFT = 16  # row id = (counter << 16) | subtask index: unique across subtasks
KINDS = ("inner", "left", "right", "full")


class IntervalJoinOperator(EventTimeJoin):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    title = "interval join"
    kinds = KINDS
    bookkeeping = _BOOKKEEPING
    timers_name = "expiry"

    def __init__(self, node: IntervalJoinExec) -> None:
        super().__init__(node)
        self.node: IntervalJoinExec = node
        self._outer = (node.kind in ("left", "full"), node.kind in ("right", "full"))

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        node = self.node
        self._times = (compile_expr(node.left_time, node.left.schema),
                       compile_expr(node.right_time, node.right.schema))

    # -- data ---------------------------------------------------------------------------

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if not batch.num_rows:
            return []
        self._check_insert_only(input, batch)
        keys = self._condition.keys(input, batch)
        times = epoch_millis(self._times[input](batch), "interval join")
        other = self._sides[1 - input]
        stored = other.rows
        rows, matches = self._matches(input, batch, keys, times, stored)
        if len(rows):
            flags = stored.column(MATCHED).to_numpy(zero_copy_only=False).copy()
            if not flags[matches].all():
                flags[matches] = True
                other.replace(stored.set_column(stored.schema.get_field_index(MATCHED),
                                                MATCHED, pa.array(flags)))
        matched = np.bincount(rows, minlength=batch.num_rows) > 0
        keep = (self._expiry(input, times) > self._watermark) \
            & ~JoinCondition.null_keys(keys, batch.num_rows)
        self._buffer(input, batch, keys, times, matched, np.flatnonzero(keep))
        # an outer row without a partner that is not kept is padded right away
        lonely = (np.flatnonzero(~matched & ~keep) if self._outer[input]
                  else np.zeros(0, np.int64))
        own = np.concatenate([rows, lonely])
        others = np.concatenate([matches, np.full(len(lonely), -1, np.int64)])
        if not len(own):
            return []
        order = np.lexsort((others, own))  # a padded row has no match: no tie to break
        own, others = own[order], others[order]
        batch_table = positional(batch.columns, batch.num_rows)
        other_table = other.data(stored)
        if input == 0:
            return [assemble(self.node.schema, batch_table, other_table, own, others)]
        return [assemble(self.node.schema, other_table, batch_table, others, own)]

    def _expiry(self, side: int, times: np.ndarray) -> np.ndarray:
        """The watermark at which rows of ``side`` with these times can no longer match."""
        if side == 0:
            return times + self.node.upper_ms
        return times - self.node.lower_ms

    def _matches(self, input: int, batch: pa.RecordBatch, keys: list[pa.Array],
                 times: np.ndarray, stored: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """Pairs (batch row, buffered row of the other side) meeting keys, time bounds
        and residual, ordered by batch row then buffered row."""
        other = self._sides[1 - input]
        condition = self._condition
        stored_times = stored.column(TIME).to_numpy()
        if input == 0:
            lid, rid = condition.key_pairs(keys, batch.num_rows, other.keys(stored),
                                           stored.num_rows)
            lt, rt = times[lid], stored_times[rid]
        else:
            lid, rid = condition.key_pairs(other.keys(stored), stored.num_rows, keys,
                                           batch.num_rows)
            lt, rt = stored_times[lid], times[rid]
        inside = (lt + self.node.lower_ms <= rt) & (rt <= lt + self.node.upper_ms)
        lid, rid = lid[inside], rid[inside]
        batch_table = positional(batch.columns, batch.num_rows)
        if input == 0:
            rows, matches = condition.residual(batch_table, other.data(stored), lid, rid)
        else:
            matches, rows = condition.residual(other.data(stored), batch_table, lid, rid)
        order = np.lexsort((matches, rows))
        return rows[order], matches[order]

    def _buffer(self, input: int, batch: pa.RecordBatch, keys: list[pa.Array],
                times: np.ndarray, matched: np.ndarray, take: np.ndarray) -> None:
        """Store rows ``take`` of ``batch`` with fresh ids and one expiry timer each."""
        if not len(take):
            return
        counters = self._next_counter + np.arange(len(take), dtype=np.int64)
        self._next_counter += len(take)
        ids = (counters << _ID_SHIFT) | self.context.subtask_index
        side = self._sides[input]
        rows = side.new_rows(keys, batch, take, [pa.array(times[take]),
                                                 pa.array(matched[take]), pa.array(ids)])
        side.append(rows)
        self._timers.register(rows.column(KEY_GROUP).to_numpy(), ids,
                              self._expiry(input, times[take]))

    # -- time ---------------------------------------------------------------------------

    def _advance(self, watermark: int) -> list[pa.RecordBatch]:
        """Move event time to ``watermark``: drop expired rows, pad outer rows that never
        matched."""
        due = self._timers.advance(watermark)
        if not due.num_rows:
            return []
        ids = due.column("namespace")
        padded: list[pa.RecordBatch] = []
        expiry: list[np.ndarray] = []
        arrival: list[np.ndarray] = []
        for input, side in enumerate(self._sides):
            gone = side.table.take(pc.is_in(side.rows.column(ROW_ID), value_set=ids)
                                   .to_numpy(zero_copy_only=False))
            if not self._outer[input] or not gone.num_rows:
                continue
            lonely = gone.filter(pc.invert(gone.column(MATCHED)))
            if not lonely.num_rows:
                continue
            own = np.arange(lonely.num_rows)
            none = np.full(lonely.num_rows, -1)
            data = side.data(lonely)
            empty = self._sides[1 - input].data(self._sides[1 - input].rows.slice(0, 0))
            padded.append(assemble(self.node.schema, data, empty, own, none) if input == 0
                          else assemble(self.node.schema, empty, data, none, own))
            expiry.append(self._expiry(input, lonely.column(TIME).to_numpy()))
            arrival.append(lonely.column(ROW_ID).to_numpy())
        if not padded:
            return []
        order = np.lexsort((np.concatenate(arrival), np.concatenate(expiry)))
        table = pa.Table.from_batches(padded).take(pa.array(order))
        return table.combine_chunks().to_batches()
