"""Window join: Flink's ``WindowJoinOperator`` (event time).

Contract. Input 0 is the left input, input 1 the right one; both are insert-only (an
updating batch is an error) and carry window bounds (``left_window``/``right_window``:
window_start, window_end). The equi keys include the bounds, so two rows can only meet when
they belong to the same window. A window *fires* when the watermark reaches
``window_end - 1`` (the moment a window aggregate emits it): its buffered rows of both sides
are joined once -- keys equal and not NULL, residual true -- and the result is emitted
together with, for the outer kinds, the rows of the outer side(s) that found no partner,
padded with NULLs; SEMI emits the left rows with a partner, ANTI those without. Then the
window's rows leave state. The output is insert-only for every kind: nothing emitted is
ever retracted.

Late rows. A row whose window already fired (``window_end - 1 <= watermark`` on arrival)
is dropped and counted in the metric ``late_records_dropped``, as Flink does: its window's
result is out already. End of input fires every window.

Order. Per firing, windows in ``window_end`` order; within a window, left rows in arrival
order, each followed by its partners in right arrival order (a padded left row in its
place), then the padded right rows in arrival order.

State: one keyed table per side (key columns with the bounds among them, data columns, the
row's window end in epoch milliseconds and an arrival number) and one timer per (key
group, window) in the timer service, whose timestamp ``window_end - 1`` says when the
window fires (its namespace is the key group, so a rescaled restore keeps exactly the
timers of the rows it keeps); a watermark that fires nothing touches no state. Rows with a
NULL key are stored only by a side that emits unmatched rows (they are padded when their
window fires). The watermark and the arrival counter go to union list state on snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.physical_streaming import WindowJoinExec
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import make_batch
from flowsql.runtime.kernels.epoch_millis import epoch_millis
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.join.event_time_join import EventTimeJoin
from flowsql.runtime.operators.join.join_condition import JoinCondition
from flowsql.runtime.operators.join.side_state import SideState, assemble
from flowsql.runtime.state.keyed_table import KEY_GROUP

WINDOW_END, SEQ = "$window_end", "$seq"
_BOOKKEEPING = (pa.field(WINDOW_END, pa.int64(), nullable=False),
                pa.field(SEQ, pa.int64(), nullable=False))
_ID_SHIFT = 16  # arrival number = (counter << 16) | subtask index: unique across subtasks
KINDS = ("inner", "left", "right", "full", "semi", "anti")
LATE_RECORDS_DROPPED = "late_records_dropped"


class WindowJoinOperator(EventTimeJoin):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    title = "window join"
    kinds = KINDS
    bookkeeping = _BOOKKEEPING
    timers_name = "windows"

    def __init__(self, node: WindowJoinExec) -> None:
        super().__init__(node)
        self.node: WindowJoinExec = node
        kind = node.kind
        #: per side, whether its rows without a partner are emitted
        self._unmatched = (kind in ("left", "full", "anti"), kind in ("right", "full"))

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        context.metrics.setdefault(LATE_RECORDS_DROPPED, 0)
        node = self.node
        self._ends = (compile_expr(node.left_window[1], node.left.schema),
                      compile_expr(node.right_window[1], node.right.schema))

    # -- data ---------------------------------------------------------------------------

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if not batch.num_rows:
            return []
        self._check_insert_only(input, batch)
        ends = epoch_millis(self._ends[input](batch), "window join")
        on_time = ends - 1 > self._watermark
        late = batch.num_rows - int(on_time.sum())
        if late:
            self.context.metrics[LATE_RECORDS_DROPPED] += late
        keys = self._condition.keys(input, batch)
        keep = on_time
        if not self._unmatched[input]:  # a NULL key never matches: nothing to emit for it
            keep = keep & ~JoinCondition.null_keys(keys, batch.num_rows)
        self._buffer(input, batch, keys, ends, np.flatnonzero(keep))
        return []

    def _buffer(self, input: int, batch: pa.RecordBatch, keys: list[pa.Array],
                ends: np.ndarray, take: np.ndarray) -> None:
        """Store rows ``take`` of ``batch`` with fresh arrival numbers, and make sure their
        windows have a timer in each row's key group."""
        if not len(take):
            return
        counters = self._next_counter + np.arange(len(take), dtype=np.int64)
        self._next_counter += len(take)
        seq = (counters << _ID_SHIFT) | self.context.subtask_index
        side = self._sides[input]
        rows = side.new_rows(keys, batch, take, [pa.array(ends[take]), pa.array(seq)])
        side.append(rows)
        groups = rows.column(KEY_GROUP).to_numpy()
        self._timers.register(groups, groups.astype(np.int64), ends[take] - 1)

    # -- time ---------------------------------------------------------------------------

    def _advance(self, watermark: int) -> list[pa.RecordBatch]:
        """Fire the windows ``watermark`` passes."""
        if not self._timers.advance(watermark).num_rows:
            return []
        left, right = (self._take_fired(side, watermark) for side in self._sides)
        if not left.num_rows and not right.num_rows:
            return []
        return self._join(left, right)

    @staticmethod
    def _take_fired(side: SideState, watermark: int) -> pa.Table:
        """Remove and return the rows of windows that fire at ``watermark``, ordered by
        window end then arrival."""
        ends = side.rows.column(WINDOW_END).to_numpy()
        fired = side.table.take(ends - 1 <= watermark)
        if fired.num_rows > 1:
            fired = fired.take(pc.sort_indices(fired, [(WINDOW_END, "ascending"),
                                                       (SEQ, "ascending")]))
        return fired

    def _join(self, left: pa.Table, right: pa.Table) -> list[pa.RecordBatch]:
        """The output of the fired windows whose rows are ``left`` and ``right`` (see the
        module docstring for the order)."""
        lsides, rsides = self._sides
        condition = self._condition
        lid, rid = condition.key_pairs(lsides.keys(left), left.num_rows, rsides.keys(right),
                                       right.num_rows)
        ldata, rdata = lsides.data(left), rsides.data(right)
        lid, rid = condition.residual(ldata, rdata, lid, rid)
        lmatched = np.zeros(left.num_rows, bool)
        lmatched[lid] = True
        kind = self.node.kind
        if kind in ("semi", "anti"):
            kept = np.flatnonzero(lmatched if kind == "semi" else ~lmatched)
            if not len(kept):
                return []
            taken = ldata.take(pa.array(kept))
            return [make_batch(taken.columns, self.node.schema, len(kept))]
        if self._unmatched[0]:
            lonely = np.flatnonzero(~lmatched)
            lid = np.concatenate([lid, lonely])
            rid = np.concatenate([rid, np.full(len(lonely), -1, np.int64)])
        lends = left.column(WINDOW_END).to_numpy()
        rends = right.column(WINDOW_END).to_numpy()
        end, part, first, second = lends[lid], np.zeros(len(lid), np.int64), lid, rid
        if self._unmatched[1]:
            rmatched = np.zeros(right.num_rows, bool)
            rmatched[rid[rid >= 0]] = True
            lonely = np.flatnonzero(~rmatched)
            lid = np.concatenate([lid, np.full(len(lonely), -1, np.int64)])
            rid = np.concatenate([rid, lonely])
            end = np.concatenate([end, rends[lonely]])
            part = np.concatenate([part, np.ones(len(lonely), np.int64)])
            first = np.concatenate([first, lonely])
            second = np.concatenate([second, np.zeros(len(lonely), np.int64)])
        if not len(lid):
            return []
        order = np.lexsort((second, first, part, end))
        return [assemble(self.node.schema, ldata, rdata, lid[order], rid[order])]
