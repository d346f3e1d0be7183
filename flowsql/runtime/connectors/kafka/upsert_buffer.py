"""``sink.buffer-flush.max-rows`` / ``sink.buffer-flush.interval`` of the upsert-kafka sink:
changes wait in a buffer that keeps only the last change per key, so a key updated many
times between two flushes is written once (Flink's reducing upsert writer).

The buffer is flushed when it holds ``max-rows`` changes, when a change arrives and the
oldest buffered one has waited ``interval``, at every snapshot and at the end of the input.
The sink has no timer of its own, so a buffer that receives nothing more waits for the next
snapshot (every checkpoint) or the end of the input rather than exactly ``interval``.
Both options are set together (Flink's rule): one without the other is an error.

A flush keeps, per key, the record of its last change (a tombstone if that was a delete),
in the order of those last changes; the records of different keys keep their relative
order, so a reader still sees every key's latest value last.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from flowsql.errors import CatalogError

MAX_ROWS = "sink.buffer-flush.max-rows"
INTERVAL = "sink.buffer-flush.interval"


def check_buffer_options(table: str, max_rows: int, interval_ms: int) -> bool:
    """Whether buffering is on; an error when only one of the two options enables it."""
    if (max_rows > 0) != (interval_ms > 0):
        raise CatalogError(f"upsert-kafka table '{table}': '{MAX_ROWS}' and '{INTERVAL}' "
                           "must both be greater than zero to buffer (or both 0)")
    return max_rows > 0


def last_change_per_key(records: pa.Table) -> pa.Table:
    """The record of every key's last change, in the order of those changes."""
    position = pa.array(np.arange(records.num_rows, dtype=np.int64))
    last = (pa.table({"key": records.column("key"), "position": position})
            .group_by("key", use_threads=False).aggregate([("position", "max")]))
    return records.take(np.sort(last.column("position_max").to_numpy()))


class UpsertBuffer:
    """Buffered upsert records (``records.RECORDS``) in front of ``write``."""

    def __init__(self, max_rows: int, interval_ms: int,
                 write: Callable[[pa.Table], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_rows = max_rows
        self.interval_s = interval_ms / 1000
        self._write = write
        self._clock = clock
        self._tables: list[pa.Table] = []
        self._rows = 0
        self._oldest: float | None = None

    def add(self, records: pa.Table) -> None:
        if not records.num_rows:
            return
        now = self._clock()
        if self._oldest is None:
            self._oldest = now
        self._tables.append(records)
        self._rows += records.num_rows
        if self._rows >= self.max_rows or now - self._oldest >= self.interval_s:
            self.flush()

    def flush(self) -> None:
        if not self._tables:
            return
        records = last_change_per_key(pa.concat_tables(self._tables))
        self._tables, self._rows, self._oldest = [], 0, None
        self._write(records)
