"""Event-time timers: due timers in timestamp order, deduplicated, snapshotted with state."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flowsql.runtime.time.timers import TimerService

timers = st.lists(st.tuples(st.integers(0, 15), st.integers(0, 20), st.integers(-50, 50)),
                  max_size=40)


def _service(entries) -> TimerService:
    service = TimerService("t", 16)
    if entries:
        groups, namespaces, timestamps = (np.array(c) for c in zip(*entries))
        service.register(groups, namespaces, timestamps)
    return service


def _fired(service: TimerService, watermarks) -> list[list[tuple[int, int]]]:
    return [list(zip(t.column("timestamp").to_pylist(), t.column("namespace").to_pylist()))
            for t in (service.advance(w) for w in watermarks)]


@settings(max_examples=50, deadline=None)
@given(timers, st.lists(st.integers(-60, 60), max_size=6))
def test_advance_fires_due_timers_once_in_order_and_restore_behaves_as_original(
        entries, watermarks):
    watermarks = sorted(watermarks) + [10**6]
    original = _service(entries)
    restored = TimerService("t", 16)
    restored.restore(original.snapshot())
    fired = _fired(original, watermarks)
    assert fired == _fired(restored, watermarks)
    flat = [t for batch in fired for t in batch]
    assert flat == sorted({(ts, ns) for _, ns, ts in entries})
    for batch, watermark in zip(fired, watermarks):
        assert all(ts <= watermark for ts, _ in batch)


def test_delete_and_key_group_subset_restore():
    service = _service([(1, 10, 5), (2, 11, 6), (9, 12, 7), (9, 13, 8)])
    service.delete(np.array([11]))
    assert service.next_timestamp() == 5
    half = TimerService("t", 16)
    half.restore(service.snapshot(), range(8, 16))
    assert half.advance(100).column("namespace").to_pylist() == [12, 13]
    assert service.advance(100).column("namespace").to_pylist() == [10, 12, 13]
    assert service.next_timestamp() is None
