"""ROW_NUMBER, RANK and DENSE_RANK over the whole input (no PARTITION BY), computed while
walking the rows in window order batch by batch, so the rows never need to be in memory
together (they come from an external sort).

Each batch's peer groups are found with :func:`window_frames.change_flags` over the batch
with the previous batch's last row in front, so a peer group spanning two batches is one
group; the counters carried from batch to batch make the numbers those of the in-memory
evaluation over all rows at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from flowsql.planner.expressions import WindowCall
from flowsql.runtime.operators.over.streamed_running import is_running
from flowsql.runtime.operators.over.streamed_shifts import is_shift
from flowsql.runtime.operators.over.window_frames import change_flags

#: the functions computed here
STREAMED = ("row_number", "rank", "dense_rank")


def streamable(calls: Sequence[WindowCall]) -> bool:
    """Calls without PARTITION BY that can be evaluated together over rows in window order:
    built-in ranking functions (this module), running aggregates (:mod:`streamed_running`)
    and LAG / LEAD with constant offsets (:mod:`streamed_shifts`) of one ORDER BY."""
    return bool(calls) and all(
        (not c.partition_by and c.function is None and c.name in STREAMED or is_running(c)
         or is_shift(c))
        and c.order_by == calls[0].order_by for c in calls)


class RunningRanks:
    """The ranking numbers of consecutive batches of rows in window order."""

    def __init__(self) -> None:
        self._rows = 0
        self._rank = 0
        self._dense = 0
        self._last: list[pa.Array] | None = None

    def next(self, order: Sequence[pa.Array], n: int) -> dict[str, np.ndarray]:
        """Per function name, the numbers of the next ``n`` rows (``order``: their ORDER BY
        values)."""
        if self._last is None:
            flags = change_flags(order, n)
        else:
            joined = [pa.concat_arrays([last, column])
                      for last, column in zip(self._last, order)]
            flags = change_flags(joined, n + 1)[1:]
        numbers = self._rows + 1 + np.arange(n, dtype=np.int64)
        rank = np.maximum.accumulate(np.where(flags, numbers, self._rank))
        dense = self._dense + np.cumsum(flags, dtype=np.int64)
        if n:
            self._rows += n
            self._rank = int(rank[-1])
            self._dense = int(dense[-1])
            self._last = [column.slice(n - 1) for column in order]
        return {"row_number": numbers, "rank": rank, "dense_rank": dense}
