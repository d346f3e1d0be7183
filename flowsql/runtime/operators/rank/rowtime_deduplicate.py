"""Rowtime deduplication: ``ROW_NUMBER() OVER (PARTITION BY k ORDER BY rowtime ASC|DESC)
= 1`` on an unwindowed stream (Flink's ``RowTimeDeduplicateFunction``, without
mini-batch).

Semantics, per record in arrival order (exactly Flink's, so that the changelog is the same
however the input is chunked): each key keeps one stored row;

* keep-first (``ASC``): a record replaces the stored row when there is none or its rowtime
  is strictly smaller;
* keep-last (``DESC``): when there is none or its rowtime is greater or equal (so the
  latest arrival wins ties);

a replacement emits ``+I(new)`` when the key had no row, otherwise ``-U(old)``, ``+U(new)``;
a record that does not replace emits nothing. The output is updating.

Keep-first ignores late records: a record whose rowtime is below the current watermark
is dropped (and counted in ``late_records_dropped``) before it is compared, as Flink
decides the first row of a key once the watermark passes it, so a record behind the
watermark can neither become a key's first row nor replace it. A record exactly at the
watermark is still on time (Flink 2.3 keeps it: with a zero-delay watermark, a second
record with the rowtime of the first of the stream becomes its key's first row). Keep-last judges every
record (a late record only wins with a rowtime at or above the stored one).

Vectorized per batch: the stored rows of the touched key groups are taken out of state and
put in front of the batch; after a stable sort by (partition, arrival) the stored value of a
key when record ``i`` arrives is the running minimum (keep-first) or maximum (keep-last) of
the rowtimes before it in its partition, so the replacing records are found with one
segmented cumulative min/max, and each one retracts the previous replacing record of its
partition. The last replacing record of each partition is the new stored row.

State time-to-live (``table.exec.state.ttl``): a key's stored row is written when a record
replaces it (Flink updates the state only then), so a key expires the interval after its
last replacement; its next record is then the key's first again and emits ``+I``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.physical_streaming import RankExec
from flowsql.runtime.changelog import INSERT, UPDATE_AFTER, UPDATE_BEFORE
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.rank import ranking_state
from flowsql.runtime.operators.watermark.event_time_operator import EventTimeOperator
from flowsql.runtime.state.keyed_table import KEY_GROUP

_TIME = "__rowtime"
LATE_RECORDS_DROPPED = "late_records_dropped"


class RowtimeDeduplicate(EventTimeOperator):
    """See the module docstring; ``restore_state`` must follow ``open``."""

    def __init__(self, node: RankExec) -> None:
        if not (node.lower == node.upper == 1 and len(node.order) == 1):
            raise ExecutionError("rowtime deduplication keeps rank 1 of a single ORDER BY "
                                 "rowtime key")
        self.node = node
        self._keep_last = not node.order[0].ascending
        self._data_schema = ranking_state.stored_data_schema(node)
        self._state_schema = pa.schema([*self._data_schema, pa.field(_TIME, pa.int64())])

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        context.metrics.setdefault(LATE_RECORDS_DROPPED, 0)
        self._partition, self._order = ranking_state.compile_all(self.node)
        self._start_event_time(context)
        self._rows = self._store.keyed_table("rows", self._state_schema, expires=True)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if not self._keep_last:
            batch = self._without_late(batch)
        if not batch.num_rows:
            return []
        self._store.expire()
        groups = self._rows.key_groups_of([fn(batch) for fn in self._partition],
                                          batch.num_rows)
        stored, written = self._rows.take_stamped(self._rows.in_key_groups(np.unique(groups)))
        m = stored.num_rows
        data = ranking_state.concat_batches(ranking_state.as_batch(stored, self._data_schema),
                                     ranking_state.renamed(batch, self._data_schema))
        times = ranking_state.millis(self._order[0](data), "deduplication")
        all_groups = np.concatenate([stored.column(KEY_GROUP).to_numpy(), groups])
        ids = ranking_state.partition_ids([fn(data) for fn in self._partition], data.num_rows)
        # stored rows come first in arrival order, and there is at most one per partition
        order = np.lexsort((np.arange(data.num_rows), ids))
        sorted_ids = ids[order]
        starts = np.r_[True, sorted_ids[1:] != sorted_ids[:-1]]
        value = _dense(times[order], starts)
        current = _segmented_extreme(value, starts, self._keep_last)
        previous = np.r_[current[:1], current[:-1]]  # the stored value before each record
        replaces = starts | ((value >= previous) if self._keep_last else (value < previous))
        positions = np.flatnonzero(replaces)  # sorted positions of replacing records
        has_old = ~starts[positions]
        old = np.r_[-1, positions[:-1]]  # previous replacing record of the same partition
        emitted = order[positions] >= m  # stored rows are not news
        out = self._changelog(data, order, positions[emitted], old[emitted], has_old[emitted])
        last = np.r_[starts[positions[1:]], True]  # the final row of each partition
        keep = order[positions[last]]
        written = np.concatenate([written, self._store.ttl.stamps(batch.num_rows)])
        self._rows.append(ranking_state.state_rows(
            all_groups[keep], data.take(pa.array(keep)), [(_TIME, times[keep])],
            self._rows.schema), written[keep])
        return out

    def _without_late(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` without the records behind the watermark (see the module docstring)."""
        if not batch.num_rows:
            return batch
        on_time = ranking_state.millis(self._order[0](batch), "deduplication") >= self._watermark
        late = int(len(on_time) - on_time.sum())
        if not late:
            return batch
        self.context.metrics[LATE_RECORDS_DROPPED] += late
        return batch.filter(pa.array(on_time))

    def _advance(self, watermark: int) -> list[pa.RecordBatch]:
        return []  # the watermark only decides lateness; nothing waits for it

    def _changelog(self, data: pa.RecordBatch, order: np.ndarray, positions: np.ndarray,
                   old: np.ndarray, has_old: np.ndarray) -> list[pa.RecordBatch]:
        """``-U(old)``, ``+U(new)`` or ``+I(new)`` per replacing record, in arrival order."""
        new_rows = order[positions]
        arrival = new_rows * 2 + 1
        retract_rows = order[old[has_old]]
        rows = np.concatenate([retract_rows, new_rows])
        sequence = np.concatenate([arrival[has_old] - 1, arrival])
        kinds = np.concatenate([np.full(len(retract_rows), UPDATE_BEFORE, np.int8),
                                np.where(has_old, UPDATE_AFTER, INSERT).astype(np.int8)])
        emit = np.argsort(sequence, kind="stable")
        ranks = np.ones(len(rows), np.int64)
        return ranking_state.output(self.node, data, rows[emit], ranks, kinds[emit])


def _dense(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``values`` as dense ranks shifted per segment so that one global cumulative min or
    max never crosses a segment start: every value of segment ``s`` lies in
    ``[s * width, (s + 1) * width)``. Dense ranks keep ``width`` at most the row count,
    so the shift cannot overflow int64 the way raw epoch milliseconds could."""
    _, dense = np.unique(values, return_inverse=True)
    dense = np.asarray(dense, np.int64).reshape(-1)
    width = len(values) + 1
    return dense + (np.cumsum(starts) - 1) * width


def _segmented_extreme(shifted: np.ndarray, starts: np.ndarray, maximum: bool) -> np.ndarray:
    """Running max (or min) within each segment of ``shifted``, values :func:`_dense`
    made of the segments' values."""
    if maximum:  # later segments hold larger values: a global running max resets per segment
        return np.maximum.accumulate(shifted)
    # for the minimum, mirror every segment's values and take a running max
    width = len(shifted) + 1
    segment = (np.cumsum(starts) - 1) * width
    mirrored = segment + (width - 1 - (shifted - segment))
    return segment + (width - 1 - (np.maximum.accumulate(mirrored) - segment))
