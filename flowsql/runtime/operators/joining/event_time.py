"""What the event-time joins (interval join, window join) share: two insert-only inputs
buffered in keyed side state, one timer service, and event time that moves on watermarks.

A subclass says which kinds it supports, what bookkeeping columns its sides store and what
its timers are called, and implements ``_advance(watermark)`` (fire what the watermark
passes; called only when the watermark moved forward, after ``self._watermark`` was set).
This base keeps the rest identical for both: state built with ``StateStore.for_context``,
end of input as the +infinity watermark once both inputs ended, and the watermark plus the
arrival counter in union list state on snapshot (``EventTimeProgress``).
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.physical_streaming import IntervalJoinExec, WindowJoinExec
from flowsql.runtime.changelog import is_updating
from flowsql.runtime.events import MAX_WATERMARK
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.joining.condition import JoinCondition
from flowsql.runtime.operators.joining.sides import SideState
from flowsql.runtime.state.progress import EventTimeProgress
from flowsql.runtime.state.store import StateStore
from flowsql.runtime.time.watermarks import MIN_WATERMARK


class EventTimeJoin(Operator):
    """Base of the event-time joins; ``restore_state`` must follow ``open``."""

    #: e.g. "interval join", for messages
    title = ""
    kinds: tuple[str, ...] = ()
    #: the bookkeeping columns each side stores after its data
    bookkeeping: tuple[pa.Field, ...] = ()
    #: the name of the timer service
    timers_name = ""

    def __init__(self, node: IntervalJoinExec | WindowJoinExec) -> None:
        if node.kind not in self.kinds:
            raise ExecutionError(f"{self.title}: unsupported join kind {node.kind!r}")
        self.node = node
        self._widths = (len(node.left.schema), len(node.right.schema))

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        node = self.node
        self._condition = JoinCondition(node.left.schema, node.right.schema, node.left_keys,
                                        node.right_keys, node.residual)
        self._store = StateStore.for_context(context)
        types = self._condition.key_types
        self._sides = (
            SideState(self._store, "left", node.left.schema, types, self.bookkeeping),
            SideState(self._store, "right", node.right.schema, types, self.bookkeeping))
        self._timers = self._store.timers(self.timers_name)
        self._progress = EventTimeProgress(self._store)
        self._watermark = MIN_WATERMARK
        self._next_counter = 0
        # end of input is not checkpointed: no checkpoint is taken after an input ended
        self._ended: set[int] = set()

    def _check_insert_only(self, input: int, batch: pa.RecordBatch) -> None:
        if is_updating(batch, self._widths[input]):
            raise ExecutionError(f"{self.title}: inputs must be insert-only, input "
                                 f"{input} carries row kinds")

    # -- time ---------------------------------------------------------------------------

    def process_watermark(self, watermark: int) -> Iterable[pa.RecordBatch]:
        return self._moved(watermark)

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        self._ended.add(input)
        if len(self._ended) < 2:
            return []
        return self._moved(MAX_WATERMARK)

    def _moved(self, watermark: int) -> list[pa.RecordBatch]:
        if watermark <= self._watermark:
            return []
        self._watermark = watermark
        return self._advance(watermark)

    def _advance(self, watermark: int) -> list[pa.RecordBatch]:
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
