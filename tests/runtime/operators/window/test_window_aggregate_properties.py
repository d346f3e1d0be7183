"""Properties of the window aggregate: chunking does not matter, checkpoint/restore does
not matter, rescaling by key groups does not matter; all against a per-record reference."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from flowsql.runtime.operators.window.window_specs import WindowSpec
from flowsql.runtime.partitioning import split_batch_by_subtask
from flowsql.runtime.state.store import merge_snapshots
from tests.harness.windows import batches, feed, open_operator, reference, rows, run

WINDOWS = [WindowSpec.tumble(10), WindowSpec.tumble(7, offset=2), WindowSpec.hop(4, 12),
           WindowSpec.cumulate(3, 9), WindowSpec.session(4)]

events = st.lists(st.tuples(st.sampled_from(["a", "b", "c", None]),
                            st.integers(-20, 60), st.one_of(st.none(), st.integers(-5, 5))),
                  min_size=1, max_size=40)


def _sorted(rows_):
    return sorted(rows_, key=lambda r: tuple((v is None, v) for v in r))


def _sizes(draw_sizes: list[int], total: int) -> list[int]:
    sizes, left = [], total
    for size in draw_sizes:
        if left <= 0:
            break
        sizes.append(min(size, left))
        left -= size
    if left > 0:
        sizes.append(left)
    return sizes


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(WINDOWS), events, st.integers(0, 8),
       st.lists(st.integers(1, 12), max_size=10))
def test_any_chunking_equals_the_per_record_reference(window, stream, delay, chunking):
    actual, late = run(window, stream, delay, _sizes(chunking, len(stream)))
    expected, expected_late = reference(window, stream, delay)
    assert _sorted(actual) == _sorted(expected)
    assert late == expected_late


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(WINDOWS), events, st.integers(0, 8),
       st.lists(st.integers(1, 8), max_size=8), st.integers(0, 10))
def test_snapshot_restore_into_a_fresh_operator_changes_nothing(window, stream, delay,
                                                                 chunking, cut):
    chunks = batches(stream, _sizes(chunking, len(stream)), delay)
    cut = min(cut, len(chunks))
    operator, _ = open_operator(window)
    out = []
    for batch, watermark in chunks[:cut]:
        out.extend(feed(operator, batch, watermark))
    snapshot = operator.snapshot_state(1)
    operator.process_batch(0, chunks[cut][0]) if cut < len(chunks) else None  # diverge
    restored, _ = open_operator(window)
    restored.restore_state(snapshot)
    for batch, watermark in chunks[cut:]:
        out.extend(feed(restored, batch, watermark))
    out.extend(restored.end_input(0))
    expected, _ = reference(window, stream, delay)
    assert _sorted(rows(out)) == _sorted(expected)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(WINDOWS), events, st.integers(0, 8), st.integers(0, 40))
def test_rescaled_restore_splits_key_groups_between_subtasks(window, stream, delay, cut):
    """Run on one subtask, snapshot, restore on two (each keeps its key groups), route the
    rest of the input by key: the union of the outputs equals the unrescaled run."""
    before, after = stream[:cut], stream[cut:]
    out = []
    snapshots = []
    if before:
        operator, _ = open_operator(window)
        (batch, watermark), = batches(before, [len(before)], delay)
        out.extend(feed(operator, batch, watermark))
        snapshots.append(operator.snapshot_state(1))
    state = merge_snapshots(snapshots)
    subtasks = [open_operator(window, index, 2)[0] for index in range(2)]
    for operator in subtasks:
        if state:
            operator.restore_state(state)
    if after:
        # the harness computes arrival watermarks over the whole stream: continue from cut
        rest = batches(stream, [len(before), len(after)] if before else [len(after)], delay)[-1]
        parts = split_batch_by_subtask(rest[0], [0], 2, 128)
        for operator, part in zip(subtasks, parts):
            out.extend(feed(operator, part, rest[1]))
    for operator in subtasks:
        out.extend(operator.end_input(0))
    expected, _ = reference(window, stream, delay)
    assert _sorted(rows(out)) == _sorted(expected)


def test_restore_keeps_only_the_key_groups_of_the_subtask():
    stream = [(k, t, 1) for t in range(0, 30, 3) for k in ("a", "b", "c", "d", "e")]
    operator, _ = open_operator(WindowSpec.tumble(100))
    (batch, watermark), = batches(stream, [len(stream)], 1000)
    feed(operator, batch, watermark)
    snapshot = operator.snapshot_state(7)
    keys_per_subtask = []
    for index in range(2):
        restored, _ = open_operator(WindowSpec.tumble(100), index, 2)
        restored.restore_state(snapshot)
        keys_per_subtask.append({r[0] for r in rows(list(restored.end_input(0)))})
    assert keys_per_subtask[0] | keys_per_subtask[1] == {"a", "b", "c", "d", "e"}
    assert not keys_per_subtask[0] & keys_per_subtask[1]
    routed = split_batch_by_subtask(batch, [0], 2, 128)
    for index in range(2):
        assert keys_per_subtask[index] == set(routed[index].column(0).to_pylist())
    assert isinstance(snapshot["keyed/windows"], pa.Table)
