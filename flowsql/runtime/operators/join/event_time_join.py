"""What the event-time joins (interval join, window join) share beyond every event-time
operator (``watermark.event_time_operator``): two insert-only inputs buffered in keyed side state
and one timer service.

A subclass says which kinds it supports, what bookkeeping columns its sides store and what
its timers are called, and implements ``_advance(watermark)``.
"""

from __future__ import annotations

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.physical_streaming import IntervalJoinExec, WindowJoinExec
from flowsql.runtime.changelog import is_updating
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.join.join_condition import JoinCondition
from flowsql.runtime.operators.join.side_state import both_sides
from flowsql.runtime.operators.watermark.event_time_operator import EventTimeOperator


class EventTimeJoin(EventTimeOperator):
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
        self._start_event_time(context)
        node = self.node
        self._condition = JoinCondition(node.left.schema, node.right.schema, node.left_keys,
                                        node.right_keys, node.residual)
        types = self._condition.key_types
        self._sides = both_sides(self._store, node.left.schema, node.right.schema, types,
                                 self.bookkeeping)
        self._timers = self._store.timers(self.timers_name)

    def _check_insert_only(self, input: int, batch: pa.RecordBatch) -> None:
        if is_updating(batch, self._widths[input]):
            raise ExecutionError(f"{self.title}: inputs must be insert-only, input "
                                 f"{input} carries row kinds")
