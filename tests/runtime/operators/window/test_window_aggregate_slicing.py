"""Sliced fixed windows: slice geometry, the numpy merge, and the window aggregate on
integer keys (the numpy merge path) with hand-checked rows -- late HOP records, batches cut
by per-record watermarks, compaction of shared slices, snapshot/restore in the middle."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.window.slicing import Slicing
from flowsql.runtime.operators.window.sorted_merge import merge_sorted, numpy_mergeable
from flowsql.runtime.operators.window.window_aggregate import (
    LATE_RECORDS_DROPPED,
    WindowAggregateOperator,
)
from flowsql.runtime.operators.window.window_specs import (
    AggregateSpec,
    WindowAggregateSpec,
    WindowSpec,
)
from flowsql.runtime.time.watermarks import MIN_WATERMARK, BoundedOutOfOrderness

# -- geometry ---------------------------------------------------------------------------


def test_hop_slices_and_their_windows() -> None:
    slicing = Slicing.of(WindowSpec.hop(5, 15))
    assert slicing.unit == 5
    assert slicing.slice_ends(np.array([0, 4, 5, -1, -5])).tolist() == [5, 5, 10, 0, 0]
    # slice [0, 5) is in [-10, 5), [-5, 10), [0, 15): the last ends at 15
    assert slicing.last_window_ends(np.array([5, 10])).tolist() == [15, 20]
    assert slicing.window_start(15) == 0


def test_tumble_and_cumulate_slices_with_offsets() -> None:
    tumble = Slicing.of(WindowSpec.tumble(10, offset=3))
    assert tumble.slice_ends(np.array([2, 3, 12, 13])).tolist() == [3, 13, 13, 23]
    assert tumble.last_window_ends(np.array([13])).tolist() == [13]
    assert tumble.window_start(13) == 3
    # CUMULATE step 2, size 6, offset 1: periods [1, 7), [7, 13); windows [1, 3), [1, 5), ...
    cumulate = Slicing.of(WindowSpec.cumulate(2, 6, offset=1))
    assert cumulate.slice_ends(np.array([1, 2, 6, 7])).tolist() == [3, 3, 7, 9]
    assert cumulate.last_window_ends(np.array([3, 7, 9])).tolist() == [7, 7, 13]
    assert [cumulate.window_start(e) for e in (3, 5, 7, 9, 13)] == [1, 1, 1, 7, 7]


def test_due_window_ends_skip_windows_without_slices() -> None:
    slicing = Slicing.of(WindowSpec.hop(5, 15))
    slices = np.array([5, 30])  # windows 5, 10, 15 and 30, 35, 40 hold a slice
    assert slicing.window_ends_due(slices, MIN_WATERMARK, 100).tolist() == [
        5, 10, 15, 30, 35, 40]
    # due when moving from 8 to 33: ends with 8 < end - 1 <= 33
    assert slicing.window_ends_due(slices, 8, 33).tolist() == [10, 15, 30]
    assert slicing.window_ends_due(slices, 40, 2**63 - 1).tolist() == []
    # overlapping slices list each end once
    assert slicing.window_ends_due(np.array([5, 10]), MIN_WATERMARK, 100).tolist() == [
        5, 10, 15, 20]
    assert slicing.window_ends_due(np.array([], np.int64), 0, 100).tolist() == []


def test_epochs_change_exactly_when_a_window_end_becomes_due() -> None:
    slicing = Slicing.of(WindowSpec.hop(5, 10))
    # window ends 5, 10 fire at watermarks 4, 9
    epochs = slicing.epochs(np.array([MIN_WATERMARK, 3, 4, 8, 9, 9]))
    assert (np.diff(epochs) != 0).tolist() == [True, True, False, True, False]
    assert slicing.first_due_end(MIN_WATERMARK) < -(2**61)
    assert slicing.first_due_end(4) == 10 and slicing.first_due_end(3) == 5


# -- numpy merge ------------------------------------------------------------------------

_PARTS = [("c", "sum", pa.int64()), ("s", "sum", pa.int64()), ("lo", "min", pa.int32()),
          ("hi", "max", pa.int32())]


def test_merge_sorted_matches_hand_checked_groups_with_nulls() -> None:
    rows = pa.table({
        "k": pa.array([3, 1, 3, 2, 1], pa.int64()),
        "g": pa.array([30, 10, 30, 20, 10], pa.int32()),
        "c": pa.array([1, 2, 3, 4, 5], pa.int64()),
        "s": pa.array([None, 5, None, 7, None], pa.int64()),
        "lo": pa.array([4, None, -2, None, 9], pa.int32()),
        "hi": pa.array([4, None, -2, None, 9], pa.int32()),
    })
    merged = merge_sorted(rows, "k", _PARTS, carry=["g"])
    assert merged is not None
    assert merged.column_names == ["k", "g", "c", "s", "lo", "hi"]
    assert merged.to_pylist() == [
        {"k": 1, "g": 10, "c": 7, "s": 5, "lo": 9, "hi": 9},
        {"k": 2, "g": 20, "c": 4, "s": 7, "lo": None, "hi": None},
        {"k": 3, "g": 30, "c": 4, "s": None, "lo": -2, "hi": 4},
    ]
    assert merged.schema.field("lo").type == pa.int32()


def test_merge_sorted_wraps_like_arrow_and_declines_null_keys() -> None:
    big = 2**63 - 1
    rows = pa.table({"k": pa.array([1, 1], pa.int64()), "c": pa.array([big, 2], pa.int64()),
                     "s": pa.array([1, 1], pa.int64()), "lo": pa.array([1, 1], pa.int32()),
                     "hi": pa.array([1, 1], pa.int32())})
    merged = merge_sorted(rows, "k", _PARTS)
    acero = rows.group_by(["k"], use_threads=False).aggregate([("c", "sum")])
    assert merged is not None
    assert merged.column("c").to_pylist() == acero.column("c_sum").to_pylist() == [-big]
    with_null = rows.set_column(0, "k", pa.array([1, None], pa.int64()))
    assert merge_sorted(with_null, "k", _PARTS) is None


def test_numpy_merge_applies_to_one_integer_key_and_integer_accumulators() -> None:
    assert numpy_mergeable([pa.int32()], _PARTS)
    assert not numpy_mergeable([pa.int64(), pa.int64()], _PARTS)
    assert not numpy_mergeable([pa.string()], _PARTS)
    assert not numpy_mergeable([pa.int64()], [("s", "sum", pa.float64())])


# -- the operator on integer keys -------------------------------------------------------

SCHEMA = pa.schema([("k", pa.int64()), ("ts", pa.int64()), ("v", pa.int64()),
                    ("wm", pa.int64())])
AGGS = (AggregateSpec("count_star", None, "cnt"), AggregateSpec("sum", 2, "total"),
        AggregateSpec("max", 2, "top"))

# WATERMARK ts - 2 at auto-watermark-interval 0; (key, ts, value), arrival watermark:
#   1@1 2@3 1@12 1@2 2@7 1@25 2@4 1@16 3@14
#   -inf -1  1   10  10  10   23  23   23
# 1@2 and 2@4: both windows fired -> late; 2@7 (v NULL) joins only [5, 15);
# 1@16 joins only [15, 25); 3@14: [5, 15) and [10, 20) fired -> late.
EVENTS = [(1, 1, 10), (2, 3, 20), (1, 12, 30), (1, 2, 40), (2, 7, None), (1, 25, 50),
          (2, 4, 60), (1, 16, 70), (3, 14, 80)]
HOP_ROWS = [(1, -5, 5, 1, 10, 10), (2, -5, 5, 1, 20, 20), (1, 0, 10, 1, 10, 10),
            (2, 0, 10, 1, 20, 20), (1, 5, 15, 1, 30, 30), (2, 5, 15, 1, None, None),
            (1, 10, 20, 1, 30, 30), (1, 15, 25, 1, 70, 70), (1, 20, 30, 1, 50, 50),
            (1, 25, 35, 1, 50, 50)]


def _open(window: WindowSpec) -> tuple[WindowAggregateOperator, OperatorContext]:
    operator = WindowAggregateOperator.from_spec(WindowAggregateSpec(
        SCHEMA, 1, window, (0,), AGGS, watermark_column=3))
    context = OperatorContext("window")
    operator.open(context)
    return operator, context


def _batches(events: Sequence[tuple[int | None, int, int | None]], sizes: Sequence[int],
             delay: int = 2) -> list[tuple[pa.RecordBatch, int | None]]:
    generator = BoundedOutOfOrderness(delay)
    out, start = [], 0
    for size in sizes:
        chunk = events[start:start + size]
        start += size
        ts = np.array([e[1] for e in chunk], np.int64)
        progress = generator.on_batch(ts)
        out.append((pa.record_batch(
            [pa.array([e[0] for e in chunk], pa.int64()), pa.array(ts),
             pa.array([e[2] for e in chunk], pa.int64()), pa.array(progress.row_watermarks)],
            schema=SCHEMA), progress.emit))
    return out


def _feed(operator: WindowAggregateOperator, batch: pa.RecordBatch,
          watermark: int | None) -> list[pa.RecordBatch]:
    out = list(operator.process_batch(0, batch))
    if watermark is not None:
        out.extend(operator.process_watermark(watermark))
    return out


def _rows(out: Sequence[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    if not out:
        return []
    return [tuple(r.values()) for r in pa.Table.from_batches(out).to_pylist()]


def _run(window: WindowSpec, sizes: Sequence[int]) -> tuple[list[tuple[Any, ...]], int]:
    operator, context = _open(window)
    out: list[pa.RecordBatch] = []
    for batch, watermark in _batches(EVENTS, sizes):
        out.extend(_feed(operator, batch, watermark))
    out.extend(operator.end_input(0))
    return _rows(out), context.metrics[LATE_RECORDS_DROPPED]


@pytest.mark.parametrize("sizes", [[9], [1] * 9, [2, 2, 2, 3], [4, 5]])
def test_hop_late_records_join_their_later_windows_however_batched(sizes: list[int]) -> None:
    # one batch of all records: the per-record watermarks make [-5, 5) and [0, 10) due
    # inside the batch, so it is cut there and 2@7 still joins [5, 15) alone
    rows, late = _run(WindowSpec.hop(5, 10), sizes)
    assert rows == HOP_ROWS
    assert late == 3


def test_hop_snapshot_and_restore_in_the_middle() -> None:
    batches = _batches(EVENTS, [2, 3, 1, 3])
    operator, _ = _open(WindowSpec.hop(5, 10))
    out: list[pa.RecordBatch] = []
    for batch, watermark in batches[:2]:
        out.extend(_feed(operator, batch, watermark))
    # the second batch's watermarks fire [-5, 5) and [0, 10) mid-batch; slice [0, 5) is
    # done, 2@7 waits in slice [5, 10) and 1@12 in [10, 15)
    assert _rows(out) == HOP_ROWS[:4]
    snapshot = operator.snapshot_state(1)
    assert snapshot["keyed/windows"].column("slice_end").to_pylist() == [10, 15]
    restored, context = _open(WindowSpec.hop(5, 10))
    restored.restore_state(snapshot)
    for batch, watermark in batches[2:]:
        out.extend(_feed(restored, batch, watermark))
    out.extend(restored.end_input(0))
    assert _rows(out) == HOP_ROWS
    assert context.metrics[LATE_RECORDS_DROPPED] == 2  # 2@4 and 3@14, after the restore


def test_shared_slices_fed_by_many_batches_are_compacted_once() -> None:
    # 30 records of keys 0..2 over [0, 30), one per batch: every slice gets several tables
    events = [(t % 3, t, t) for t in range(30)]
    operator, _ = _open(WindowSpec.hop(10, 30))
    out: list[pa.RecordBatch] = []
    for batch, watermark in _batches(events, [1] * 30, delay=100):
        out.extend(_feed(operator, batch, watermark))
    out.extend(operator.end_input(0))
    expected = []
    for start in (-20, -10, 0, 10, 20):
        for key in range(3):
            values = [t for t in range(30) if t % 3 == key and start <= t < start + 30]
            expected.append((key, start, start + 30, len(values), sum(values), max(values)))
    assert _rows(out) == expected


def test_null_key_and_null_values_fall_back_to_the_group_by() -> None:
    events = [(None, 1, 5), (2, 2, None), (None, 3, 7), (2, 4, None), (1, 6, 1)]
    operator, _ = _open(WindowSpec.tumble(5))
    out: list[pa.RecordBatch] = []
    for batch, watermark in _batches(events, [2, 3], delay=100):
        out.extend(_feed(operator, batch, watermark))
    out.extend(operator.end_input(0))
    assert _rows(out) == [(2, 0, 5, 2, None, None), (None, 0, 5, 2, 12, 7),
                          (1, 5, 10, 1, 1, 1)]


def test_cumulate_on_integer_keys() -> None:
    # CUMULATE step 5, size 10, WATERMARK ts - 2: 1@1, 1@6, 2@3 (arrival 4: [0, 5) fired,
    # joins [0, 10)), 1@12
    events = [(1, 1, 1), (1, 6, 2), (2, 3, 3), (1, 12, 4)]
    operator, context = _open(WindowSpec.cumulate(5, 10))
    out: list[pa.RecordBatch] = []
    for batch, watermark in _batches(events, [4]):
        out.extend(_feed(operator, batch, watermark))
    out.extend(operator.end_input(0))
    assert _rows(out) == [(1, 0, 5, 1, 1, 1), (1, 0, 10, 2, 3, 2), (2, 0, 10, 1, 3, 3),
                          (1, 10, 15, 1, 4, 4), (1, 10, 20, 1, 4, 4)]
    assert context.metrics[LATE_RECORDS_DROPPED] == 0
