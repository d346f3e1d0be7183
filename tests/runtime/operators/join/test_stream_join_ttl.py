"""Regular streaming joins with state time-to-live, on a fixed processing-time clock.
Expected changelogs are hand-checked against Flink's StreamingJoinOperator with a state
TTL: a stored row expires when it was not written for the interval (stored, its count
changed, or -- on an outer side -- its number of matches changed), an expired row no
longer matches, and a retraction still emits against the live rows of the other side."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from flowsql.runtime.changelog import DELETE
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.join.stream_join import StreamJoinOperator
from tests.harness.processing_clock import ManualClock
from tests.runtime.operators.join.test_stream_join import _batch, _changelog, _join

N = None
TTL = {"table.exec.state.ttl": "10 ms"}
Event = tuple[int, int, list[tuple[Any, ...]], list[int] | None]  # time, input, rows, kinds


def _open(node: Any, clock: ManualClock) -> StreamJoinOperator:
    operator = StreamJoinOperator(node)
    operator.open(OperatorContext("join", TTL, processing_clock=clock))
    return operator


def _run(node: Any, events: list[Event], restore_at: int | None = None
         ) -> list[tuple[str, tuple[Any, ...]]]:
    clock = ManualClock()
    operator = _open(node, clock)
    out: list[pa.RecordBatch] = []
    for at, input, data, kinds in events:
        if restore_at is not None and at >= restore_at:
            snapshot = operator.snapshot_state(1)
            clock.now = restore_at
            operator = _open(node, clock)
            operator.restore_state(snapshot)
            restore_at = None
        clock.now = at
        out.extend(operator.process_batch(input, _batch(node, input, data, kinds)))
    return _changelog(node, out)


def test_inner_join_expired_rows_no_longer_match_and_matching_does_not_refresh():
    node = _join("inner")
    assert _run(node, [
        (0, 0, [(1, "a1"), (2, "a2")], None),
        (5, 1, [(1, "b1")], None),               # reads a1: does not keep it alive
        (8, 0, [(2, "a2")], None),               # a2 again: count 2, written at 8
        (12, 1, [(1, "b1x"), (2, "b2")], None),  # a1 (written at 0) has expired
        (14, 0, [(1, "a1c")], None),             # b1 (5) and b1x (12) are live
        (15, 0, [(1, "a1d")], None),             # b1 has expired at 15
    ]) == [
        ("+I", (1, "a1", 1, "b1")),
        ("+I", (2, "a2", 2, "b2")), ("+I", (2, "a2", 2, "b2")),
        ("+I", (1, "a1c", 1, "b1")), ("+I", (1, "a1c", 1, "b1x")),
        ("+I", (1, "a1d", 1, "b1x")),
    ]


def test_left_join_match_counts_write_the_outer_side():
    node = _join("left")
    assert _run(node, [
        (0, 0, [(1, "a1")], None),
        (6, 1, [(1, "b1")], None),                # a1's match count changes: written at 6
        (12, 1, [(1, "b1x")], None),              # a1 live (6 + 10 > 12), written at 12
        (21, 1, [(1, "b1")], [DELETE]),           # b1 expired at 16; -D still emits
        (21, 0, [(1, "a2")], None),               # b1x (written at 12) still live
        (23, 0, [(1, "a3")], None),               # b1x expired at 22: a3 is alone
        (23, 1, [(1, "b1y")], None),              # a1 and a2 still count one match each
    ]) == [
        ("+I", (1, "a1", N, N)),
        ("-D", (1, "a1", N, N)), ("+I", (1, "a1", 1, "b1")),
        ("+I", (1, "a1", 1, "b1x")),
        ("-D", (1, "a1", 1, "b1")),
        ("+I", (1, "a2", 1, "b1x")),
        ("+I", (1, "a3", N, N)),
        ("-D", (1, "a3", N, N)),
        ("+I", (1, "a1", 1, "b1y")), ("+I", (1, "a2", 1, "b1y")), ("+I", (1, "a3", 1, "b1y")),
    ]


def test_retracting_a_stored_row_writes_it():
    node = _join("inner", updating=True)
    assert _run(node, [
        (0, 0, [(1, "a1"), (1, "a1")], None),     # count 2
        (8, 0, [(1, "a1")], [DELETE]),            # count 1, written at 8
        (15, 1, [(1, "b1")], None),               # live: 8 + 10 > 15
        (18, 1, [(1, "b2")], None),               # expired at 18
    ]) == [("+I", (1, "a1", 1, "b1"))]


def test_restore_drops_rows_expired_by_restore_time_and_keeps_ages():
    node = _join("inner")
    assert _run(node, [
        (0, 0, [(1, "a1")], None),
        (4, 0, [(2, "a2")], None),
        (12, 1, [(1, "b1"), (2, "b2")], None),    # restored at 11: a1 is gone
        (14, 1, [(2, "b2x")], None),              # a2 keeps its age: expired at 14
    ], restore_at=11) == [("+I", (2, "a2", 2, "b2"))]
