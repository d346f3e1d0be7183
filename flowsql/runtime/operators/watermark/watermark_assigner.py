"""Watermark assigner: the table's ``WATERMARK FOR ts AS ts - INTERVAL ...`` at its source.

Forwards every batch unchanged and emits :class:`Watermark` events between them (the
streaming runner routes those downstream like any watermark).

With ``pipeline.auto-watermark-interval`` = 0, Flink emits a watermark after every record
that advances it. Emitting one event per record would cost a batch per record, so the
assigner splits a batch only where it matters: before each record that is *possibly late*
(its rowtime is at or below the watermark in effect when it arrives) it emits exactly that
watermark. Every other record has a rowtime above the watermark it would have seen, and
no event-time operator treats such a record as late (every window, interval or frame it
belongs to ends after its rowtime), so seeing an older watermark changes nothing for it;
timers merely fire a little later, at the next split or the end of the batch. The result
therefore equals per-record emission, however the input is chunked.

Records whose rowtime is NULL pass through without moving the watermark.

State: the generator's ``max(event time seen) - delay`` (``current``), the watermark it
emitted and the last one this operator sent, as one union list-state row per subtask. A
restored assigner resumes from them, so a record the failed run would have judged
possibly late still is, and no watermark older than one already sent goes out again
(Flink does not checkpoint its watermark generators: they restart from no watermark, and
a record the failed run had judged late may then pass as on time). A rescaled
restore takes the minimum of each over the old subtasks: a subtask then treats nothing as
late that every old subtask would not have.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.physical_streaming import WatermarkAssignerExec
from flowsql.runtime.events import Watermark
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.epoch_millis import epoch_millis
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.state.store import StateStore
from flowsql.runtime.time.watermarks import MIN_WATERMARK, BoundedOutOfOrderness

_PROGRESS = pa.schema([pa.field("current", pa.int64(), nullable=False),
                       pa.field("emitted", pa.int64(), nullable=False),
                       pa.field("sent", pa.int64(), nullable=False)])

#: what the assigner emits: batches and the watermarks between them
Element: TypeAlias = pa.RecordBatch | Watermark


class WatermarkAssignerOperator(Operator):
    """See the module docstring."""

    #: the assigner makes watermarks; the runner must not forward upstream ones past it
    forwards_watermarks = False

    def __init__(self, node: WatermarkAssignerExec) -> None:
        self.node = node

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._time = compile_expr(self.node.time_column, self.node.input.schema)
        self._generator = BoundedOutOfOrderness(self.node.delay_ms, self.node.interval_ms)
        self._last = MIN_WATERMARK  # the last watermark sent; only advances are sent
        self._store = StateStore.for_context(context)
        self._progress = self._store.list_state("watermark", _PROGRESS, "union")

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[Element]:  # type: ignore[override]
        out: list[Element] = []
        for element in self._split(batch):
            if isinstance(element, Watermark):
                if element.timestamp <= self._last:
                    continue
                self._last = element.timestamp
            out.append(element)
        return out

    def _split(self, batch: pa.RecordBatch) -> Iterator[Element]:
        time = self._time(batch)
        valid = np.asarray(time.is_valid())
        if not valid.any():
            yield batch
            return
        positions = np.flatnonzero(valid)
        ts = epoch_millis(time.filter(pa.array(valid)), "watermark assigner")
        before = self._generator.emitted
        marks = self._generator.on_batch(ts)
        if self.node.interval_ms == 0:
            late = np.flatnonzero(ts <= marks.row_watermarks)
            seen = marks.row_watermarks[late]
            fresh = np.r_[seen[:1] > before, seen[1:] != seen[:-1]] if len(late) else late
            start = 0
            for cut in late[fresh]:  # one step per possibly-late record, not per record
                at = int(positions[cut])
                if at > start:
                    yield batch.slice(start, at - start)
                yield Watermark(int(marks.row_watermarks[cut]))
                start = at
            batch = batch.slice(start)
        if batch.num_rows:
            yield batch
        if marks.emit is not None:
            yield Watermark(marks.emit)

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        self._progress.update(pa.table({"current": [self._generator.current],
                                        "emitted": [self._generator.emitted],
                                        "sent": [self._last]}, schema=_PROGRESS))
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)
        rows = self._progress.rows
        if not rows.num_rows:
            return
        current, emitted, sent = (int(pc.min(rows.column(name)).as_py())
                                  for name in _PROGRESS.names)
        self._generator.resume(current, emitted)
        self._last = sent

    def on_idle(self) -> Iterable[Element]:
        """Periodic emission while no records arrive (positive intervals only)."""
        if self.node.interval_ms == 0:
            return ()
        emit = self._generator.on_periodic()
        if emit is None or emit <= self._last:
            return ()
        self._last = emit
        return (Watermark(emit),)
