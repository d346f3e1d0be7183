"""What every operator that waits for event time shares (window Top-N, the windowed
aggregate, OVER aggregates, interval and window joins).

Such an operator keeps its state in one ``StateStore`` and fires what the watermark
passes. This base owns the rest, identically for all of them:

* ``open`` must call ``_start_event_time(context)``: it builds the store, the progress
  state and the fields ``_watermark`` (MIN_WATERMARK) and ``_next_counter`` (0: the
  counter an operator draws arrival numbers or ids from);
* a watermark that does not move event time forward is ignored; one that does sets
  ``_watermark`` and calls the subclass's ``_advance(watermark)``, whose output is the
  operator's output;
* end of input is the +infinity watermark, once every input has ended;
* snapshot saves the watermark and the counter in union list state next to the store's
  tables (``EventTimeProgress``); restore brings both back (the minimum watermark, the
  maximum counter, over the old subtasks) and then calls ``_restored()``.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.runtime.events import MAX_WATERMARK
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.state.progress import EventTimeProgress
from flowsql.runtime.state.store import StateStore
from flowsql.runtime.time.watermarks import MIN_WATERMARK


class EventTimeOperator(Operator):
    """Base of the event-time operators; ``restore_state`` must follow ``open``."""

    def _start_event_time(self, context: OperatorContext) -> None:
        self._store = StateStore.for_context(context)
        self._progress = EventTimeProgress(self._store)
        self._watermark = MIN_WATERMARK
        self._next_counter = 0
        # end of input is not checkpointed: no checkpoint is taken after an input ended
        self._ended: set[int] = set()

    # -- time ---------------------------------------------------------------------------

    def process_watermark(self, watermark: int) -> Iterable[pa.RecordBatch]:
        return self._moved(watermark)

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        self._ended.add(input)
        if len(self._ended) < len(self.node.inputs):  # type: ignore[attr-defined]
            return []
        return self._moved(MAX_WATERMARK)

    def _moved(self, watermark: int) -> list[pa.RecordBatch]:
        if watermark <= self._watermark:
            return []
        self._watermark = watermark
        return self._advance(watermark)

    def _advance(self, watermark: int) -> list[pa.RecordBatch]:
        """Fire what event time ``watermark`` (already in ``_watermark``) makes final."""
        raise NotImplementedError

    # -- checkpoints --------------------------------------------------------------------

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        self._progress.save(self._watermark, self._next_counter)
        return self._store.snapshot()

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._store.restore(state)
        restored = self._progress.restored()
        if restored is not None:
            self._watermark, self._next_counter = restored
        self._restored()

    def _restored(self) -> None:
        """Rebuild what derives from the restored state (nothing by default)."""
