"""Runs a streaming ``RankExec``: ``ROW_NUMBER() OVER (PARTITION BY keys ORDER BY order)``
kept where ``lower <= rn <= upper``, over an insert-only input (the planner guarantees it).

The node is one of three streaming algorithms, chosen as Flink chooses them:

* ``window`` is set -- window Top-N / window deduplication (``rank.window_rank``): rows
  are buffered per (partition, window) and ranked once when the watermark passes the
  window's end; insert-only output, late rows dropped and counted;
* ``time_attribute == "rowtime"`` without a window -- rowtime deduplication
  (``rank.rowtime_deduplicate``): keep-first or keep-last per key, per record in arrival order;
  updating output;
* otherwise -- unwindowed Top-N (``rank.streaming_top_n``): updated once per input batch (Flink's
  mini-batch behaviour); updating output.

Output: the input columns, then the row number (BIGINT) when ``rank_field`` is set; an
updating output carries the ``$row_kind`` column (``runtime.changelog``). All state lives in
the algorithm's :class:`StateStore` (keyed by the partition keys' key groups), so the
operator snapshots and restores like any other.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.planner.physical_streaming import RankExec
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.rank.rowtime_deduplicate import RowtimeDeduplicate
from flowsql.runtime.operators.rank.streaming_top_n import TopN
from flowsql.runtime.operators.rank.window_rank import WindowRank


def _algorithm(node: RankExec) -> Operator:
    if node.window is not None:
        return WindowRank(node)
    if node.time_attribute == "rowtime":
        return RowtimeDeduplicate(node)
    return TopN(node)


class RankOperator(Operator):
    """See the module docstring; delegates every hook to the chosen algorithm."""

    def __init__(self, node: RankExec) -> None:
        self.node = node
        self._inner = _algorithm(node)

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._inner.open(context)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        return self._inner.process_batch(input, batch)

    def process_watermark(self, watermark: int) -> Iterable[pa.RecordBatch]:
        return self._inner.process_watermark(watermark)

    def on_timer(self, timestamp: int) -> Iterable[pa.RecordBatch]:
        return self._inner.on_timer(timestamp)

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        return self._inner.end_input(input)

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        return self._inner.snapshot_state(checkpoint_id)

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._inner.restore_state(state)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self._inner.notify_checkpoint_complete(checkpoint_id)

    def close(self) -> None:
        self._inner.close()
