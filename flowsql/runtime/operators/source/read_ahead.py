"""Read ahead: decode the next Parquet row group on a background thread while the operators
above work on the current one.

Decoding Parquet (decompression, page decoding) runs in Arrow's C++ code without Python's
global lock, so one background thread decoding the next unit overlaps the decoding with the
joins and aggregates that consume the current unit: on a machine with two or more cores a
scan-heavy query's decoding mostly leaves its critical path.

Contract: :func:`read_ahead` yields exactly what reading the units one after another in the
calling thread would yield, in the same order, unit by unit; only *when* a unit is decoded
changes. At most ``depth`` units beyond the one being consumed are decoded and held (a
Parquet row group, bounded by the writer's row-group size); units read by the ``inline``
predicate (CSV/JSON files, which may be large) are read lazily in the calling thread as
before. Closing the generator early (LIMIT, cancellation, a failure downstream) cancels the
units not started and does not wait for the one being decoded. An error decoding a unit is
raised when that unit is reached, as it would have been without reading ahead.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import pyarrow as pa

Unit = TypeVar("Unit")

#: units decoded ahead of the one being consumed
DEPTH = 1


def _decoded(read: Callable[[Unit], Iterator[pa.RecordBatch]], unit: Unit
             ) -> list[pa.RecordBatch]:
    return list(read(unit))


def read_ahead(units: Sequence[Unit], read: Callable[[Unit], Iterator[pa.RecordBatch]],
               inline: Callable[[Unit], bool], depth: int = DEPTH
               ) -> Iterator[tuple[Unit, Iterator[pa.RecordBatch]]]:
    """Per unit, in order: the unit and its batches (see the module docstring)."""
    if depth < 1 or sum(not inline(u) for u in units) < 2:
        for unit in units:
            yield unit, read(unit)
        return
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scan-read-ahead")
    pending: deque[tuple[Unit, Future[list[pa.RecordBatch]] | None]] = deque()
    following = iter(units)

    def top_up(size: int) -> None:
        while len(pending) < size:
            unit = next(following, None)
            if unit is None:
                return
            decoded = None if inline(unit) else pool.submit(_decoded, read, unit)
            pending.append((unit, decoded))

    try:
        top_up(depth + 1)
        while pending:
            unit, decoded = pending.popleft()
            top_up(depth)  # while ``unit`` is consumed, the next ``depth`` are decoded
            yield unit, (read(unit) if decoded is None else iter(decoded.result()))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
