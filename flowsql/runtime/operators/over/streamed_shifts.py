"""LAG and LEAD over the whole input (no PARTITION BY) with a constant offset, computed
while walking the rows in window order chunk by chunk (as :mod:`streamed_ranking`), so the
rows never need to be in memory together.

LAG by ``k`` needs the ``k`` rows before a chunk: they are carried over from the chunks
before. LEAD by ``k`` needs the ``k`` rows after it: the caller hands each chunk over
together with the first ``k`` rows that follow it (:func:`with_lookahead`). Either way the
chunk's values are those of ``window_functions.shifted`` over (carried or following rows
and the chunk) as one partition, which is what the in-memory evaluation computes over
all rows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from flowsql.planner.expressions import Literal, WindowCall
from flowsql.runtime.operators.over import window_functions as W
from flowsql.runtime.operators.over.window_frames import Layout


def constant_offset(call: WindowCall) -> int | None:
    """The call's offset if it is a non-negative integer constant (1 when not given)."""
    if len(call.args) < 2:
        return 1
    offset = call.args[1]
    if isinstance(offset, Literal) and isinstance(offset.value, int) \
            and not isinstance(offset.value, bool) and offset.value >= 0:
        return offset.value
    return None


def is_shift(call: WindowCall) -> bool:
    """LAG / LEAD over the whole input with a constant offset."""
    return (call.function is None and not call.partition_by and call.name in ("lag", "lead")
            and bool(call.args) and constant_offset(call) is not None)


def lookahead_rows(calls: Iterable[WindowCall]) -> int:
    """The rows after a chunk the group's LEAD calls need."""
    return max((constant_offset(c) or 0 for c in calls if is_shift(c) and c.name == "lead"),
               default=0)


class RunningShift:
    """One LAG / LEAD call's values over consecutive chunks of rows in window order."""

    def __init__(self, call: WindowCall) -> None:
        offset = constant_offset(call)
        assert offset is not None
        self._lag = call.name == "lag"
        self._offset = offset
        #: LAG: the last ``offset`` values of the chunks so far
        self._tail: pa.Array | None = None

    def next(self, values: pa.Array, default: pa.Array | None, ahead: pa.Array) -> pa.Array:
        """The values of the chunk's rows: ``values`` the argument over the chunk,
        ``default`` the default argument (None: NULL), ``ahead`` the argument over the
        rows that follow the chunk (at least the offset's rows, fewer only at the end)."""
        n = len(values)
        if default is None:
            default = pa.nulls(n, values.type)
        if self._lag:
            tail = self._tail if self._tail is not None else values.slice(0, 0)
            joined = pa.concat_arrays([tail, values])
            defaults = pa.concat_arrays([pa.nulls(len(tail), default.type), default])
            front = len(tail)
        else:
            joined = pa.concat_arrays([values, ahead.cast(values.type)])
            defaults = pa.concat_arrays([default, pa.nulls(len(ahead), default.type)])
            front = 0
        m = len(joined)
        layout = Layout.of([], [], m)
        offsets = np.full(m, -self._offset if self._lag else self._offset, dtype=np.int64)
        result = W.shifted(layout, joined, offsets, defaults).slice(front, n)
        if self._lag:
            self._tail = joined.slice(max(0, m - self._offset))
        return result


def with_lookahead(chunks: Iterable[pa.Table], rows: int
                   ) -> Iterator[tuple[pa.Table, pa.Table | None]]:
    """Each chunk with the first ``rows`` rows that follow it (None when ``rows`` is 0;
    fewer rows near the end of the input). Chunks are held until enough rows follow."""
    pending: deque[pa.Table] = deque()
    following = 0  # rows in ``pending`` after its first chunk
    for chunk in chunks:
        if not chunk.num_rows:
            continue
        if not rows:
            yield chunk, None
            continue
        if pending:
            following += chunk.num_rows
        pending.append(chunk)
        while len(pending) > 1 and following >= rows:
            first = pending.popleft()
            following -= pending[0].num_rows
            yield first, _head(pending, rows, first)
    while pending:
        first = pending.popleft()
        following -= pending[0].num_rows if pending else 0
        yield first, _head(pending, rows, first)


def _head(tables: Iterable[pa.Table], rows: int, like: pa.Table) -> pa.Table:
    """The first ``rows`` rows of ``tables`` together (of ``like``'s schema)."""
    parts, left = [], rows
    for table in tables:
        if left <= 0:
            break
        parts.append(table.slice(0, left))
        left -= min(left, table.num_rows)
    return pa.concat_tables(parts).combine_chunks() if parts else like.slice(0, 0)
