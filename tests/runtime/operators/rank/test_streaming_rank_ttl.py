"""Unwindowed Top-N and deduplication with state time-to-live, on a fixed processing-time
clock. Expected changelogs are hand-checked against Flink's TTL semantics: a stored row
is written when it enters the state (Top-N) or replaces the key's row (deduplication) and
expires the interval after that write; expiry itself emits nothing, and a key whose state
expired starts afresh (deduplication emits +I again)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from flowsql.planner.physical_streaming import RankExec
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.registry import create_operator
from tests.harness.processing_clock import ManualClock
from tests.runtime.operators.rank.test_streaming_rank import (
    DEDUP,
    TOPN,
    _batch,
    _ts_rows,
    changes,
    make_node,
)

TTL = {"table.exec.state.ttl": "10 ms"}
Step = tuple[int, pa.RecordBatch]  # (processing time, batch)


def _open(node: RankExec, clock: ManualClock) -> Operator:
    operator = create_operator(node)
    operator.open(OperatorContext("rank", TTL, processing_clock=clock))
    return operator


def _run(node: RankExec, steps: list[Step], restore_at: int | None = None
         ) -> list[tuple[Any, ...]]:
    clock = ManualClock()
    operator = _open(node, clock)
    out: list[pa.RecordBatch] = []
    for at, batch in steps:
        if restore_at is not None and at >= restore_at:
            snapshot = operator.snapshot_state(1)
            clock.now = restore_at
            operator = _open(node, clock)
            operator.restore_state(snapshot)
            restore_at = None
        clock.now = at
        out.extend(operator.process_batch(0, batch))
    return changes(node, out)


def _top2(table: pa.Table) -> RankExec:
    """ORDER BY v DESC, top 2 per k, without the rank column."""
    return make_node(table, ["k"], [("v", False)], 1, 2)


def test_top_n_rows_expire_the_interval_after_they_entered():
    node = _top2(TOPN.empty_table())
    assert _run(node, [
        (0, _batch([("a", 5, 1), ("a", 3, 2), ("b", 4, 3)])),
        (6, _batch([("a", 4, 4)])),               # a4 enters at 6, pushes a3 out
        # at 12 a5 and b4 (entered at 0) have expired, a4 (6) has not; expiry emits
        # nothing, a1 ranks second behind a4, b starts afresh
        (12, _batch([("a", 1, 5), ("b", 2, 6)])),
        (17, _batch([("a", 0, 7)])),              # a4 expired at 16: a0 enters behind a1
    ]) == [
        ("+I", "a", 5, 1), ("+I", "a", 3, 2), ("+I", "b", 4, 3),
        ("-D", "a", 3, 2), ("+I", "a", 4, 4),
        ("+I", "a", 1, 5), ("+I", "b", 2, 6),
        ("+I", "a", 0, 7),
    ]


def test_proctime_deduplication_keep_first_emits_again_after_expiry():
    # Top-1 by arrival (the shape of a deduplication on processing time): the first row
    # of a key is written once, so the key expires the interval after its first row
    node = make_node(TOPN.empty_table(), ["k"], [("id", True)], 1, 1)
    assert _run(node, [
        (0, _batch([("a", 1, 1)])),
        (5, _batch([("a", 2, 2), ("b", 1, 3)])),  # a2 is not first: nothing written
        (10, _batch([("a", 3, 4)])),              # a (written at 0) expired at 10
        (14, _batch([("b", 2, 5)])),              # b (written at 5) still there
    ]) == [
        ("+I", "a", 1, 1), ("+I", "b", 1, 3),
        ("+I", "a", 3, 4),
    ]


def test_proctime_deduplication_keep_last_writes_every_row():
    node = make_node(TOPN.empty_table(), ["k"], [("id", False)], 1, 1)
    assert _run(node, [
        (0, _batch([("a", 1, 1)])),
        (8, _batch([("a", 2, 2)])),               # replaces: written at 8
        (15, _batch([("a", 3, 3)])),              # a2 live (8 + 10 > 15)
        (30, _batch([("a", 4, 4)])),              # a3 (15) expired at 25
    ]) == [
        ("+I", "a", 1, 1),
        ("-D", "a", 1, 1), ("+I", "a", 2, 2),
        ("-D", "a", 2, 2), ("+I", "a", 3, 3),
        ("+I", "a", 4, 4),
    ]


def _dedup_batch(rows: list[tuple[str, int, int]]) -> pa.RecordBatch:
    return pa.table({"k": [r[0] for r in rows],
                     "ts": pa.array([r[1] for r in rows]).cast(pa.timestamp("ms")),
                     "v": [r[2] for r in rows]}, schema=DEDUP.schema).to_batches()[0]


def test_rowtime_deduplication_key_expires_after_its_last_replacement():
    node = make_node(DEDUP, ["k"], [("ts", True)], 1, 1, time_attribute="rowtime")
    assert _ts_rows(_run(node, [
        (0, _dedup_batch([("a", 10, 1)])),
        (5, _dedup_batch([("a", 7, 2)])),         # replaces: written at 5
        (12, _dedup_batch([("a", 6, 3)])),        # live (15 > 12), replaces: written at 12
        (21, _dedup_batch([("a", 9, 4)])),        # live, does not replace: not written
        (22, _dedup_batch([("a", 8, 5)])),        # expired at 22: the key's first row again
    ])) == [
        ("+I", "a", 10, 1),
        ("-U", "a", 10, 1), ("+U", "a", 7, 2),
        ("-U", "a", 7, 2), ("+U", "a", 6, 3),
        ("+I", "a", 8, 5),
    ]


def test_restore_drops_expired_partitions_and_keeps_ages():
    node = _top2(TOPN.empty_table())
    assert _run(node, [
        (0, _batch([("a", 5, 1)])),
        (3, _batch([("b", 4, 2)])),
        # restored at 11: a (entered at 0) is gone, b (3) keeps its age
        (11, _batch([("a", 1, 3), ("b", 2, 4)])),
        (13, _batch([("b", 0, 5)])),              # b4 expired at 13: b2 and b0 remain
    ], restore_at=11) == [
        ("+I", "a", 5, 1), ("+I", "b", 4, 2),
        ("+I", "b", 2, 4), ("+I", "a", 1, 3),
        ("+I", "b", 0, 5),
    ]
