"""Running aggregates over the whole input (no PARTITION BY), computed while walking the rows
in window order chunk by chunk, so the rows never need to be in memory together (they come
from an external sort, as for :mod:`streamed_ranking`).

A call is *running* when its frame starts at UNBOUNDED PRECEDING and ends at CURRENT ROW:
``ROWS`` (in any order) or ``RANGE`` with an ORDER BY (up to the row's last peer). Its
value at a row is then a function of everything before the row, carried from chunk to
chunk, and of the row's own chunk. The caller hands over chunks of whole peer groups only
(a peer group never spans two chunks), so a RANGE frame's end lies in the row's chunk.

The carried part enters the chunk's evaluation as one extra row in front of it, holding
the aggregate of all earlier rows: SUM, AVG, MIN and MAX of (carried, chunk rows ...)
over frames that start at that extra row are the values over all rows so far, computed
by the same functions (:mod:`window_functions`) and in the same domain (int64 for
integers, the exact 64-bit unscaled decimal, float64) as the in-memory evaluation, whose
prefix sums at the chunk boundary are exactly the carried value, so the results agree bit
for bit, floats included. Counts are carried as a number.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner import types as T
from flowsql.planner.expressions import Frame, SortKey, WindowCall
from flowsql.runtime.operators.over import window_functions as W
from flowsql.runtime.operators.over.window_frames import (
    Layout,
    change_flags,
    default_frame,
    frame_bounds,
)

#: the aggregate functions computed here
RUNNING = ("sum", "count", "count_star", "avg", "min", "max")


def frame_of(call: WindowCall) -> Frame:
    return call.frame or default_frame(bool(call.order_by))


def is_running(call: WindowCall) -> bool:
    """A built-in aggregate over the whole input whose frame runs from the first row to
    the current row (see the module docstring)."""
    frame = frame_of(call)
    return (call.function is None and not call.partition_by and not call.distinct
            and call.name in RUNNING
            and frame.start.kind == "unbounded_preceding" and frame.end.kind == "current_row"
            and (frame.mode == "rows" or bool(call.order_by)))


def counts_rows(call: WindowCall) -> bool:
    """COUNT(*) (no argument to evaluate)."""
    return call.name == "count_star" or (call.name == "count" and not call.args)


def _sum_domain(dtype: pa.DataType, for_average: bool) -> pa.DataType:
    """The type the in-memory frame sum adds in (see ``window_functions.frame_sum``)."""
    if T.is_decimal(dtype):
        return pa.decimal128(T.MAX_DECIMAL_PRECISION, dtype.scale)
    if T.is_integer(dtype) and not for_average:
        return pa.int64()
    return pa.float64()


class RunningAggregate:
    """One running call's values over consecutive chunks of rows in window order."""

    def __init__(self, call: WindowCall, order_by: Sequence[SortKey]) -> None:
        self._name = "count_star" if counts_rows(call) else call.name
        self._frame = frame_of(call)
        self._order_by = tuple(order_by)
        self._count = 0  # non-NULL values (rows for COUNT(*)) so far
        #: the aggregate of all earlier rows as a one-row array (NULL: no value yet)
        self._carried: pa.Array | None = None

    def next(self, values: pa.Array | None, order: Sequence[pa.Array], n: int) -> pa.Array:
        """The values of the next ``n`` rows (``values``: the argument, None for
        COUNT(*); ``order``: their ORDER BY values)."""
        layout = Layout.of([], order, n)
        _, end = frame_bounds(self._frame, layout, self._order_by, order)
        # frames over (carried row, chunk rows): from the carried row to the row's end
        start = np.zeros(n, dtype=np.int64)
        through = end + 1
        if self._name in ("count", "count_star"):
            counts = self._count + W.frame_count(values, start, end)
            self._count += int(W.frame_count(values, np.zeros(1, np.int64),
                                             np.array([n]))[0])
            return pa.array(counts)
        assert values is not None
        if self._name in ("min", "max"):
            joined = self._joined(values, values.type)
            whole = Layout.of([], [], n + 1)
            result = W.frame_extreme(joined, start, through, self._frame, whole,
                                     self._name == "max")
            self._carried = W.frame_extreme(joined, np.zeros(1, np.int64),
                                            np.array([n + 1]), self._frame, whole,
                                            self._name == "max")
            return result
        average = self._name == "avg"
        joined = self._joined(values, _sum_domain(values.type, average))
        everything = (np.zeros(1, np.int64), np.array([n + 1]))
        if average:
            total = W.frame_sum(joined, start, through, as_float=True)
            counts = self._count + W.frame_count(values, start, end)
            result = pc.divide(total, pa.array(np.maximum(counts, 1).astype(np.float64)))
            self._count += int(W.frame_count(values, np.zeros(1, np.int64),
                                             np.array([n]))[0])
        else:
            result = W.frame_sum(joined, start, through)
        self._carried = W.frame_sum(joined, *everything)
        return result

    def _joined(self, values: pa.Array, domain: pa.DataType) -> pa.Array:
        """The carried row followed by ``values``, all of type ``domain``."""
        carried = self._carried if self._carried is not None else pa.nulls(1, domain)
        values = values if values.type.equals(domain) else values.cast(domain)
        return pa.concat_arrays([carried.cast(domain), values])


def peer_chunks(tables: Iterable[pa.Table], order_width: int) -> Iterator[pa.Table]:
    """``tables`` (rows in window order, the ORDER BY values as their last ``order_width``
    columns) regrouped so that no peer group spans two chunks: each table's last peer
    group is held back and put in front of the next table's rows. The chunks are
    contiguous (one chunk per column). A peer group is held whole, so one peer group must
    fit in memory."""
    pending: pa.Table | None = None
    for table in tables:
        if table.num_rows == 0:
            continue
        if pending is not None:
            table = pa.concat_tables([pending, table])
        table = table.combine_chunks()
        width = table.num_columns
        order = [table.column(c).chunk(0) for c in range(width - order_width, width)]
        last = int(np.flatnonzero(change_flags(order, table.num_rows))[-1])
        if last:
            yield table.slice(0, last)
        pending = table.slice(last)
    if pending is not None:
        yield pending
