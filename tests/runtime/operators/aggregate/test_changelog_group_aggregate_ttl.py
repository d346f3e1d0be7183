"""Changelog GROUP BY with state time-to-live, on a fixed processing-time clock. Expected
changelogs are hand-checked against Flink's GroupAggFunction with a state TTL: a group
not written for the interval is gone (its next record emits +I again), a retraction that
finds no group state is dropped, and without TTL such a retraction stays an error."""

from __future__ import annotations

from typing import Any

import pytest

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.aggregate.changelog_group_aggregate import GroupAggregateOperator
from tests.harness.processing_clock import ManualClock
from tests.runtime.operators.aggregate.test_changelog_group_aggregate import (
    KV,
    _batches,
    _node,
    _rows,
)

TTL = {"table.exec.state.ttl": "10 ms"}
COUNT_SUM = [("count_star", None, T.INT64, False), ("sum", 1, T.INT64, False)]
Step = tuple[int, list[tuple[Any, ...]], list[str]]  # (time, rows, kinds)


def _run(node: Any, steps: list[Step], settings: dict[str, str], size: int = 100,
         restore_at: int | None = None) -> list[tuple[Any, ...]]:
    """The changelog of ``steps``, each processed at its time; with ``restore_at`` the
    operator is snapshotted after the steps before that time and restored into a new one."""
    clock = ManualClock()
    operator = GroupAggregateOperator(node)
    operator.open(OperatorContext("group", settings, processing_clock=clock))
    out = []
    for at, rows, kinds in steps:
        if restore_at is not None and at >= restore_at:
            snapshot = operator.snapshot_state(1)
            clock.now = restore_at
            operator = GroupAggregateOperator(node)
            operator.open(OperatorContext("group", settings, processing_clock=clock))
            operator.restore_state(snapshot)
            restore_at = None
        clock.now = at
        for batch in _batches(KV, rows, size, kinds):
            out.extend(operator.process_batch(0, batch))
    return _rows(node, out)


STEPS: list[Step] = [
    (0, [("a", 1), ("b", 2)], ["+I", "+I"]),
    (5, [("a", 3)], ["+I"]),
    # at 12, b (written at 0) has expired, a (written at 5) has not
    (12, [("b", 5), ("a", 1)], ["+I", "+I"]),
    # at 30 everything has expired: the first -D finds nothing and is dropped, the last
    # -D finds the group empty again and is dropped too
    (30, [("a", 1), ("a", 7), ("a", 7), ("a", 7)], ["-D", "+I", "-D", "-D"]),
]


@pytest.mark.parametrize("size", [1, 2, 4])
def test_expired_groups_start_afresh_and_orphan_retractions_are_dropped(size):
    node = _node(KV, [0], COUNT_SUM)
    assert _run(node, STEPS, TTL, size) == [
        ("+I", "a", 1, 1), ("+I", "b", 1, 2),
        ("-U", "a", 1, 1), ("+U", "a", 2, 4),
        ("+I", "b", 1, 5), ("-U", "a", 2, 4), ("+U", "a", 3, 5),
        ("+I", "a", 1, 7), ("-D", "a", 1, 7),
    ]


def test_every_write_refreshes_the_group():
    node = _node(KV, [0], COUNT_SUM)
    steps: list[Step] = [(0, [("a", 1)], ["+I"]), (9, [("a", 1)], ["+I"]),
                         (18, [("a", 1)], ["+I"]), (28, [("a", 1)], ["+I"])]
    # written at 0, 9 and 18 (each within 10 ms of the last write); at 28 it has expired
    assert _run(node, steps, TTL) == [
        ("+I", "a", 1, 1),
        ("-U", "a", 1, 1), ("+U", "a", 2, 2),
        ("-U", "a", 2, 2), ("+U", "a", 3, 3),
        ("+I", "a", 1, 1),
    ]


@pytest.mark.parametrize("size", [1, 2])
def test_retraction_of_a_row_of_the_expired_group(size):
    node = _node(KV, [0], [("count_star", None, T.INT64, False), ("sum", 1, T.INT64, False),
                           ("min", 1, T.INT64, False)])
    steps: list[Step] = [(0, [("a", 1)], ["+I"]), (20, [("a", 2)], ["+I"]),
                         (21, [("a", 1), ("a", 3)], ["-D", "+I"])]
    # the -D of 1 (added before the group expired) finds the fresh group's row: the group
    # loses its only row (Flink deletes it, sum 2 - 1 = 1 and min 2: value 1 is not held),
    # and the +I of 3 starts it afresh
    assert _run(node, steps, TTL, size) == [
        ("+I", "a", 1, 1, 1), ("+I", "a", 1, 2, 2),
        ("-D", "a", 1, 2, 2), ("+I", "a", 1, 3, 3),
    ]


def test_without_ttl_an_orphan_retraction_is_still_an_error():
    node = _node(KV, [0], COUNT_SUM)
    with pytest.raises(ExecutionError, match="retraction for a group that has no rows"):
        _run(node, [(0, [("a", 1)], ["-D"])], {})
    # and nothing expires, however much time passes
    steps: list[Step] = [(0, [("a", 1)], ["+I"]), (10**9, [("a", 1)], ["-D"])]
    assert _run(node, steps, {}) == [("+I", "a", 1, 1), ("-D", "a", 1, 1)]


def test_mini_batch_with_ttl():
    node = _node(KV, [0], COUNT_SUM)
    settings = {**TTL, "table.exec.mini-batch.enabled": "true"}
    assert _run(node, STEPS, settings) == [
        ("+I", "a", 1, 1), ("+I", "b", 1, 2),
        ("-U", "a", 1, 1), ("+U", "a", 2, 4),
        ("+I", "b", 1, 5), ("-U", "a", 2, 4), ("+U", "a", 3, 5),
        # the batch at 30 leaves a without rows: no change for a group that had none
    ]


def test_restore_drops_groups_expired_by_restore_time_and_keeps_ages():
    node = _node(KV, [0], COUNT_SUM)
    steps: list[Step] = [(0, [("a", 1)], ["+I"]), (6, [("b", 2)], ["+I"]),
                         (12, [("a", 1), ("b", 1)], ["+I", "+I"]),
                         (17, [("b", 1)], ["+I"])]
    # restored at 11: a (written at 0) is gone, b (written at 6) keeps its age, so it
    # is still there at 12 and, rewritten at 12, at 17
    assert _run(node, steps, TTL, restore_at=11) == [
        ("+I", "a", 1, 1), ("+I", "b", 1, 2),
        ("+I", "a", 1, 1), ("-U", "b", 1, 2), ("+U", "b", 2, 3),
        ("-U", "b", 2, 3), ("+U", "b", 3, 4),
    ]


def test_distinct_values_expire_with_their_group():
    node = _node(KV, [0], [("count", 1, T.INT64, True)])
    steps: list[Step] = [(0, [("a", 1), ("a", 1), ("b", 1)], ["+I", "+I", "+I"]),
                         (20, [("a", 2)], ["+I"])]
    # at 20 the values a held are gone with it: COUNT(DISTINCT v) restarts at 1, not 2
    assert _run(node, steps, TTL) == [("+I", "a", 1), ("+I", "b", 1), ("+I", "a", 1)]
    clock = ManualClock()
    operator = GroupAggregateOperator(node)
    context = OperatorContext("group", TTL, processing_clock=clock)
    operator.open(context)
    for batch in _batches(KV, [("a", 1), ("b", 1)], 2, ["+I", "+I"]):
        list(operator.process_batch(0, batch))
    assert context.gauges["state_rows"]() == 4     # two groups, two (group, value) rows
    clock.now = 10
    operator.snapshot_state(1)                     # a snapshot sweeps expired state
    assert context.gauges["state_rows"]() == 0


def test_values_restored_with_ttl_expire_with_their_group():
    # without TTL only the (group, value) pairs a batch touches are written: a's value 1
    # is last written at 0, a itself at 8; restored with TTL at 12, the value lives as
    # long as its group (as it would had the job always run with TTL), so a's distinct
    # count stays 2 when 1 comes again
    node = _node(KV, [0], [("count", 1, T.INT64, True)])
    clock = ManualClock()
    first = GroupAggregateOperator(node)
    first.open(OperatorContext("group", {}, processing_clock=clock))
    out = []
    for at, rows in [(0, [("a", 1)]), (8, [("a", 2)])]:
        clock.now = at
        for batch in _batches(KV, rows, 100, ["+I"] * len(rows)):
            out.extend(first.process_batch(0, batch))
    snapshot = first.snapshot_state(1)
    clock.now = 12
    second = GroupAggregateOperator(node)
    second.open(OperatorContext("group", TTL, processing_clock=clock))
    second.restore_state(snapshot)
    for batch in _batches(KV, [("a", 1), ("a", 3)], 100, ["+I", "+I"]):
        out.extend(second.process_batch(0, batch))
    assert _rows(node, out) == [("+I", "a", 1), ("-U", "a", 1), ("+U", "a", 2),
                                ("-U", "a", 2), ("+U", "a", 3)]
