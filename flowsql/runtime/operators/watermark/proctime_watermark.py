"""Processing-time watermarks: the wall clock as the watermark of a ``PROCTIME()`` column.

Processing time behaves here as an event time whose watermark is the wall clock. Rows get
their proctime when they are read (``PROCTIME()`` is evaluated per batch at the source's
projection), so the clock is, by construction, never behind a row already read. This
operator sits between that projection and the operator that uses the proctime as its
time attribute (a window aggregate, an interval join, an OVER aggregate); it forwards
every batch unchanged and then emits ``Watermark(now_ms - 1)``, and emits the same when
the job is idle (the streaming runner's ``on_idle`` hook), so windows fire when the wall
clock passes their end even if no more rows come.

Why ``now_ms - 1``: event-time windows fire once the watermark reaches ``window_end - 1``
and a row whose windows have all fired is late. A row read after a watermark ``w`` was
emitted has proctime ``>= now_ms > w``, so it is never late. Only a wall clock stepping
back (a system clock adjustment) could make a row late; such rows are dropped and counted
like any late row by the consumer. Watermarks only advance: a clock reading at or below
the last watermark sent emits nothing.

Upstream watermarks (a table that also declares an event-time WATERMARK) are not
forwarded: the consumer's time is processing time. The end of a bounded input still
fires everything: the runner sends +infinity when this operator's input ends.

The clock is injectable so tests fix it. It returns integer epoch milliseconds, read the
way ``PROCTIME()`` reads them (``time.watermarks.epoch_ms``): a float ``time.time()``
rounded differently could put the watermark on a later row's proctime.

State: the last watermark sent (union list state, the minimum over the old subtasks on a
rescaled restore), so a restored operator whose clock reads behind the failed run's (a
clock adjustment, another machine) sends nothing older than what already went out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.physical_streaming import ProctimeWatermarkExec
from flowsql.runtime.events import Watermark
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.state.store import StateStore
from flowsql.runtime.time.watermarks import MIN_WATERMARK, epoch_ms

_SENT = pa.schema([pa.field("sent", pa.int64(), nullable=False)])

#: what the operator emits: batches and the watermarks after them
Element: TypeAlias = pa.RecordBatch | Watermark


class ProctimeWatermarkOperator(Operator):
    """See the module docstring."""

    #: this operator makes the watermarks of its output; upstream ones stop here
    forwards_watermarks = False

    def __init__(self, node: ProctimeWatermarkExec,
                 clock: Callable[[], int] | None = None) -> None:
        self.node = node
        self._clock = clock if clock is not None else epoch_ms

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._last = MIN_WATERMARK  # the last watermark sent; only advances are sent
        self._store = StateStore.for_context(context)
        self._sent = self._store.list_state("watermark", _SENT, "union")

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[Element]:  # type: ignore[override]
        return [batch, *self._tick()]

    def process_watermark(self, watermark: int) -> Iterable[pa.RecordBatch]:
        """Upstream event time is not this stream's time: ignored."""
        return ()

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        self._sent.update(pa.table({"sent": [self._last]}, schema=_SENT))
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)
        if self._sent.rows.num_rows:
            self._last = int(pc.min(self._sent.rows.column("sent")).as_py())

    def on_idle(self) -> Iterable[Element]:
        """Nothing moved: the clock did, and windows may be due."""
        return self._tick()

    def _tick(self) -> list[Element]:
        watermark = int(self._clock()) - 1
        if watermark <= self._last:
            return []
        self._last = watermark
        return [Watermark(watermark)]
