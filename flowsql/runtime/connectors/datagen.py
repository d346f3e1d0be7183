"""The ``datagen`` connector: Flink's generated test data, reproducible and resumable.

Options (Flink's names): ``number-of-rows`` (bounded; without it and without sequence
fields the source is unbounded), ``rows-per-second`` (throttle, default 10000; 0 or
negative: unthrottled), and per field ``fields.<name>.kind`` = ``sequence`` (``start``,
``end``: the source ends when a sequence is exhausted) or ``random`` (default; ``min`` /
``max`` for numbers, temporal values as epoch milliseconds, ``length`` for strings,
default 100). Extension: ``seed`` (default 0). A throttled source emits a batch per
``execution.buffer-timeout`` of time (at most ``execution.batch-size`` rows).

With parallelism p, subtask i emits the chunks i, i + p, i + 2p, ... of
``execution.batch-size`` rows counted from a *base* row (0 at a fresh start; each throttled
to 1/p of ``rows-per-second``), so the job emits the same rows as one subtask. Row ``i`` is
a pure function of (seed, field name, i): random values come from a stable counter-based
hash, not from a stateful generator. That is what makes a run reproducible and a restore
exact: the only state is where each subtask stands in its deal, snapshotted as union
operator list state (``position``: the next chunk's first row; the deal's base, chunk size
and parallelism; ``pending``: row ranges left over from an earlier deal, emitted first).

Restored at the parallelism of the snapshot, each subtask takes its own row. Restored at
another parallelism (rescaling), the rows not yet emitted are worked out exactly
(``remaining_rows``): everything from the furthest position on, plus the chunks between
the nearest and the furthest position whose subtask had not reached them, plus the
pending ranges; the new subtasks share those ranges round robin and deal the rest anew
from the furthest position. Every row is emitted exactly once across any chain of
rescales.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from flowsql.errors import CatalogError, ConfigError
from flowsql.planner.config.connectors import DATAGEN
from flowsql.runtime.channels.settings import ChannelSettings
from flowsql.runtime.kernels.batches import batch_size
from flowsql.runtime.operators.contract import Source
from flowsql.runtime.partitioning import fmix64, hash_array
from flowsql.runtime.state.list_state import OperatorListState

#: one row per subtask: where it stands, which subtask of how many it was, the deal it
#: follows (base row, chunk size) and the ranges left over from an earlier deal
_RANGE = pa.struct([("start", pa.int64()), ("end", pa.int64())])
_POSITION = pa.schema([("position", pa.int64()), ("subtask", pa.int64()),
                       ("parallelism", pa.int64()), ("base", pa.int64()),
                       ("size", pa.int64()), ("pending", pa.list_(_RANGE))])
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


class DatagenTable:
    """The validated options of one datagen table over ``schema``."""

    def __init__(self, schema: pa.Schema, options: dict[str, str]) -> None:
        self.schema = schema
        self.options = options
        self.seed = np.uint64(_option(options, "seed") % 2**64)
        self.rows_per_second: int = _option(options, "rows-per-second")
        known = {f"fields.{f.name}." for f in schema}
        for key in options:
            if key.startswith("fields.") and not any(key.startswith(p) for p in known):
                raise CatalogError(f"datagen option '{key}' names no column of the table")
        rows = _option(options, "number-of-rows")
        limits = [-1 if rows is None else rows]
        for field in schema:
            if self._kind(field.name) == "sequence":
                start, end = self._sequence(field.name)
                limits.append(end - start + 1)
        bounded = [limit for limit in limits if limit >= 0]
        #: total rows, or None for an unbounded source
        self.total_rows: int | None = min(bounded) if bounded else None

    def rows(self, start: int, count: int) -> pa.RecordBatch:
        """Rows ``start .. start + count - 1``."""
        index = np.arange(start, start + count, dtype=np.int64)
        columns = [self._column(field, index) for field in self.schema]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def _kind(self, name: str) -> str:
        return str(_column_option(self.options, name, "kind"))

    def _sequence(self, name: str) -> tuple[int, int]:
        if f"fields.{name}.start" not in self.options or f"fields.{name}.end" not in self.options:
            raise CatalogError(f"datagen: sequence field '{name}' needs fields.{name}.start "
                               f"and fields.{name}.end")
        start: int = _column_option(self.options, name, "start")
        end: int = _column_option(self.options, name, "end")
        if end < start:
            raise CatalogError(f"datagen: sequence '{name}' ends ({end}) before it starts "
                               f"({start})")
        return start, end

    def _column(self, field: pa.Field, index: np.ndarray) -> pa.Array:
        t = field.type
        if self._kind(field.name) == "sequence":
            start, _ = self._sequence(field.name)
            values = index + start
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                return pa.array(values).cast(t)
            return _from_int64(values, t, field.name)
        salt = np.uint64(hash_array(pa.array([field.name]))[0]) ^ self.seed
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            length: int = _column_option(self.options, field.name, "length")
            return _random_strings(salt, index, length).cast(t)
        bits = _bits(salt, index)
        if pa.types.is_boolean(t):
            return pa.array((bits & np.uint64(1)).astype(bool))
        if pa.types.is_floating(t):
            low = _column_option(self.options, field.name, "min")
            high = _column_option(self.options, field.name, "max")
            low, high = 0.0 if low is None else low, 1.0 if high is None else high
            unit = (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53
            return pa.array(low + unit * (high - low)).cast(t)
        low_default, high_default = _integer_range(t, field.name)
        low = _integer(self.options, f"fields.{field.name}.min", low_default)
        high = _integer(self.options, f"fields.{field.name}.max", high_default)
        if high < low:
            raise CatalogError(f"datagen: fields.{field.name}.max is below its min")
        span = high - low + 1
        offsets = bits if span >= 2**64 else bits % np.uint64(span)
        values = (offsets + np.uint64(low % 2**64)).view(np.int64)  # wrapping add
        return _from_int64(values, t, field.name)


class DatagenSource(Source):
    """Emits a datagen table's rows in batches of ``execution.batch-size``, throttled to
    ``rows-per-second``; ``clock`` (seconds) and ``sleep`` are injectable for tests."""

    def __init__(self, table: DatagenTable,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.table = table
        self._clock = clock
        self._sleep = sleep
        self._state = OperatorListState("position", _POSITION, "union")
        self.position = 0
        #: the deal this subtask follows: chunks start at base + k * size
        self._base = 0
        self._size = 0
        #: row ranges [start, end) to emit before the deal (left by a rescaled restore)
        self._pending: list[tuple[int, int]] = []
        #: the rows of a restore not yet taken over (see ``_resume``)
        self._restored: list[dict[str, Any]] | None = None

    def _rate_and_size(self) -> tuple[int, int]:
        """This subtask's rows per second (0: unthrottled) and the chunk size of a new
        deal. Every subtask computes the same size, also when a snapshot before the first
        batch fixes the deal (``snapshot_state``): subtasks dealing different sizes would
        emit overlapping chunks."""
        size = batch_size(self.context.settings)
        rate = self.table.rows_per_second
        parallelism = self.context.parallelism
        if rate > 0 and parallelism > 1:
            rate = -(-rate // parallelism)  # the rate is the job's: each subtask does 1/p
        if rate > 0:
            # a throttled source emits what one buffer timeout's worth of time produces, so
            # a record waits at most about that long for its batch (latency follows
            # execution.buffer-timeout as it does on the channels)
            timeout = ChannelSettings.from_settings(self.context.settings).buffer_timeout_ms
            per_timeout = rate * max(timeout, 1) // 1000 if timeout >= 0 else rate
            size = max(1, min(size, rate, per_timeout))
        return rate, size

    def produce(self) -> Iterator[pa.RecordBatch]:
        subtask, parallelism = self.context.subtask_index, self.context.parallelism
        rate, size = self._rate_and_size()
        total = self.table.total_rows
        if not self._resume(size) and self._size == 0:  # a fresh start
            self._base, self._size = 0, size
            self.position = subtask * size
        size = self._size
        started, emitted_here = self._clock(), 0
        while True:
            if self._pending:
                start, end = self._pending[0]
                if total is not None and end > total:  # a chunk of the old deal past the end
                    end = min(end, total)
                    if start >= end:
                        self._pending.pop(0)
                        continue
                count = min(size, end - start)
            elif total is None or self.position < total:
                start = self.position
                count = size if total is None else min(size, total - self.position)
            else:
                return
            if rate > 0:
                # a batch goes out when its last row is due: rows wait for their batch
                wait = started + (emitted_here + count) / rate - self._clock()
                if wait > 0:
                    self._sleep(wait)
            batch = self.table.rows(start, count)
            if self._pending:
                self._pending[0] = (start + count, end)
                if start + count >= end:
                    self._pending.pop(0)
            else:
                # subtask i of p emits the chunks i, i + p, ... of ``size`` rows: together
                # the subtasks emit exactly the rows of one subtask, each once
                self.position += count + (parallelism - 1) * size
            emitted_here += count
            yield batch

    def snapshot_state(self, checkpoint_id: int) -> dict[str, pa.Table]:
        if self._restored:  # snapshotted before it started: it stands where it was restored
            self._resume(self._size or self._rate_and_size()[1])
        pending = [{"start": s, "end": e} for s, e in self._pending]
        self._state.update(pa.table({"position": [self.position],
                                     "subtask": [self.context.subtask_index],
                                     "parallelism": [self.context.parallelism],
                                     "base": [self._base], "size": [self._size],
                                     "pending": [pending]},
                                    schema=_POSITION))
        return {"list/position": self._state.snapshot()}

    def restore_state(self, state: dict[str, pa.Table]) -> None:
        self._state.restore(state["list/position"])
        self._restored = self._state.rows.to_pylist()

    def _resume(self, size: int) -> bool:
        """Take over the restored state, once the context says which subtask this is
        (see the module docstring); ``size`` is the chunk size of a new deal. False when
        there was nothing to restore."""
        if not self._restored:
            return False
        rows, self._restored = self._restored, None
        subtask, parallelism = self.context.subtask_index, self.context.parallelism
        dealt = max(row["size"] for row in rows) or size  # 0: no subtask had started
        mine = next((row for row in rows if row["subtask"] == subtask), None)
        if {row["parallelism"] for row in rows} == {parallelism} and mine is not None:
            self._base, self._size = mine["base"], dealt
            started = mine["size"] > 0
            self.position = mine["position"] if started else self._base + subtask * dealt
            self._pending = [(r["start"], r["end"]) for r in list(mine["pending"] or [])]
            return True
        ranges, furthest = remaining_rows(rows)
        self._pending = ranges[subtask::parallelism]
        self._base, self._size = furthest, size
        self.position = furthest + subtask * size
        return True


def remaining_rows(rows: list[dict[str, Any]]) -> tuple[list[tuple[int, int]], int]:
    """The rows the subtasks of one snapshot (``_POSITION`` rows, one per subtask of a
    deal) have not emitted yet: ``(ranges, furthest)`` -- every row from ``furthest`` on,
    plus the row ranges ``[start, end)`` below it, sorted."""
    ranges = [(r["start"], r["end"]) for row in rows for r in list(row["pending"] or [])]
    by_subtask = {row["subtask"]: row for row in rows}
    base, parallelism = rows[0]["base"], rows[0]["parallelism"]
    size = max(row["size"] for row in rows)  # 0: no subtask had started
    # a subtask that had not started stands at its first chunk
    starts_at = {s: (row["position"] if row["size"] else base + s * size)
                 for s, row in by_subtask.items()}
    furthest = max(starts_at.values())
    nearest = min(starts_at.values())
    if size > 0:
        # chunks between the nearest and the furthest position, each owned by one subtask:
        # left to do when its owner had not reached it
        chunks = np.arange((nearest - base) // size, (furthest - base) // size, dtype=np.int64)
        owners = chunks % parallelism
        positions = np.array([starts_at[o] for o in range(parallelism)], dtype=np.int64)
        starts = base + chunks * size
        todo = starts[starts >= positions[owners]]
        ranges += [(int(s), int(s) + size) for s in todo]
    return sorted(ranges), furthest


def _option(options: dict[str, str], key: str) -> Any:
    """The typed value of a declared datagen option (else its default)."""
    try:
        return DATAGEN.value(options, key)
    except ConfigError as error:
        raise CatalogError(f"datagen: {error}") from None


def _column_option(options: dict[str, str], column: str, name: str) -> Any:
    """The typed value of ``fields.<column>.<name>`` (else its default)."""
    try:
        return DATAGEN.column_value(options, column, name)
    except ConfigError as error:
        raise CatalogError(f"datagen: {error}") from None


def _integer(options: dict[str, str], key: str, default: int) -> int:
    """An integer bound of an integer column, exact (beyond float precision)."""
    raw = options.get(key)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise CatalogError(f"datagen option '{key}' must be an integer, got '{raw}'") from None


def _bits(salt: np.uint64, index: np.ndarray) -> np.ndarray:
    """64 random-looking bits per row index, a pure function of (salt, index)."""
    return fmix64(fmix64(index.astype(np.uint64) * _GOLDEN + salt) ^ salt)


def _random_strings(salt: np.uint64, index: np.ndarray, length: int) -> pa.Array:
    """Hex strings of ``length`` characters (Flink's random strings are hex too)."""
    words = -(-length // 16)
    cells = (index.astype(np.uint64)[:, None] * np.uint64(words)
             + np.arange(words, dtype=np.uint64)[None, :])
    bits = _bits(salt ^ _GOLDEN, cells.ravel())
    nibbles = (bits[:, None] >> (np.arange(16, dtype=np.uint64) * np.uint64(4))) & np.uint64(15)
    chars = _HEX[nibbles.reshape(len(index), words * 16)[:, :length]]
    offsets = np.arange(len(index) + 1, dtype=np.int32) * length
    return pa.StringArray.from_buffers(len(index), pa.py_buffer(offsets),
                                       pa.py_buffer(chars.tobytes()))


def _integer_range(t: pa.DataType, name: str) -> tuple[int, int]:
    if pa.types.is_integer(t):
        info = np.iinfo(t.to_pandas_dtype())
        return int(info.min), int(info.max)
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return 0, 2**41  # about year 2039 in epoch milliseconds
    raise CatalogError(f"datagen cannot generate column '{name}' of type {t}")


def _from_int64(values: np.ndarray, t: pa.DataType, name: str) -> pa.Array:
    """Integers, or epoch milliseconds for temporal columns, as type ``t``."""
    if pa.types.is_integer(t):
        return pa.array(values, pa.int64()).cast(t)
    if pa.types.is_floating(t):
        return pa.array(values.astype(np.float64)).cast(t)
    if pa.types.is_timestamp(t):
        return pa.array(values, pa.int64()).cast(pa.timestamp("ms", t.tz)).cast(t)
    if pa.types.is_date(t):
        return pa.array(values // 86_400_000, pa.int64()).cast(pa.int32()).cast(t)
    raise CatalogError(f"datagen cannot generate column '{name}' of type {t}")
