"""Reading ahead changes when a unit is decoded, never what the scan yields: the same
batches in the same order, at most ``depth`` units decoded beyond the one consumed, inline
units read in the calling thread, errors raised at their unit, an early close not waiting."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pyarrow as pa
import pytest

from flowsql.runtime.operators.source.read_ahead import read_ahead


def _batches(unit: int) -> list[pa.RecordBatch]:
    return [pa.record_batch({"u": [unit] * 3, "i": [j, j + 1, j + 2]}) for j in range(unit % 3)]


class _Reader:
    """Reads unit ``u`` as ``_batches(u)``, noting which thread started which unit."""

    def __init__(self, fail: int | None = None) -> None:
        self.started: list[tuple[int, str]] = []
        self.fail = fail
        self.lock = threading.Lock()

    def __call__(self, unit: int) -> Iterator[pa.RecordBatch]:
        with self.lock:
            self.started.append((unit, threading.current_thread().name))
        if unit == self.fail:
            raise OSError(f"unit {unit} is damaged")
        yield from _batches(unit)


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_yields_every_unit_in_order_with_its_batches(depth: int) -> None:
    units = list(range(10))
    reader = _Reader()
    got = [(unit, list(batches)) for unit, batches in
           read_ahead(units, reader, inline=lambda u: u in (4, 5), depth=depth)]
    assert got == [(u, _batches(u)) for u in units]
    assert sorted(u for u, _ in reader.started) == units
    main = threading.current_thread().name
    inline_threads = {name for u, name in reader.started if u in (4, 5)}
    assert inline_threads == {main}


def test_decodes_at_most_depth_units_ahead() -> None:
    units = list(range(8))
    reader = _Reader()
    stream = read_ahead(units, reader, inline=lambda u: False, depth=2)
    for consumed, (unit, batches) in enumerate(stream):
        list(batches)
        assert unit == consumed
        with reader.lock:
            furthest = max(u for u, _ in reader.started)
        assert furthest <= consumed + 2


def test_an_error_is_raised_at_its_unit() -> None:
    reader = _Reader(fail=3)
    seen = []
    with pytest.raises(OSError, match="unit 3 is damaged"):
        for unit, batches in read_ahead(list(range(6)), reader, inline=lambda u: False):
            list(batches)
            seen.append(unit)
    assert seen == [0, 1, 2]


def test_closing_early_stops_reading() -> None:
    release = threading.Event()
    started = []

    def slow(unit: int) -> Iterator[pa.RecordBatch]:
        started.append(unit)
        if unit >= 1:
            release.wait(10)
        yield from _batches(unit)

    stream = read_ahead(list(range(100)), slow, inline=lambda u: False)
    unit, batches = next(stream)
    assert unit == 0
    stream.close()  # unit 1 is being decoded: close neither waits for it nor starts more
    release.set()
    assert max(started) <= 2
