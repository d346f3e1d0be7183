"""Watermark operators resume from their snapshot: the assigner keeps the highest event
time it saw, so a restored run judges lateness exactly as an uninterrupted one and sends
the same elements; a rescaled restore starts from the lowest old subtask; the
processing-time operator never sends a watermark older than one already sent."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.planner.physical_streaming import ProctimeWatermarkExec, WatermarkAssignerExec
from flowsql.runtime.events import Watermark
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.watermark.proctime_watermark import ProctimeWatermarkOperator
from flowsql.runtime.operators.watermark.watermark_assigner import WatermarkAssignerOperator
from flowsql.runtime.state.store import merge_snapshots
from tests.harness.operators import leaf

TS = pa.timestamp("ms")
#: 7 s and 3 s arrive behind the watermark (delay 2 s) the records before them raised
TIMES = [10_000, 12_000, 7_000, None, 13_000, 3_000, 20_000, 19_000, 25_000]


def _assigner(batches_of: int = 2) -> tuple[WatermarkAssignerExec, list[pa.RecordBatch]]:
    node, batches = leaf(pa.table({"ts": pa.array(TIMES, TS)}), batches_of)
    return WatermarkAssignerExec(node, node.fields[0].ref(), 2_000, 0, 0.0), batches


def _open(node: WatermarkAssignerExec, state: dict[str, pa.Table] | None = None,
          subtask: int = 0, parallelism: int = 1) -> WatermarkAssignerOperator:
    operator = WatermarkAssignerOperator(node)
    operator.open(OperatorContext("assigner", subtask_index=subtask, parallelism=parallelism))
    if state is not None:
        operator.restore_state(state)
    return operator


def _elements(operator: WatermarkAssignerOperator, batches: list[pa.RecordBatch]
              ) -> list[object]:
    """Watermark values and the row times of each batch, in emission order."""
    out: list[object] = []
    for batch in batches:
        for element in operator.process_batch(0, batch):
            out.append(element.timestamp if isinstance(element, Watermark)
                       else element.column(0).cast(pa.int64()).to_pylist())
    return out


@pytest.mark.parametrize("batches_of", [1, 2, 3])
def test_restored_assigner_sends_what_an_uninterrupted_one_sends(batches_of: int) -> None:
    node, batches = _assigner(batches_of)
    expected = _elements(_open(node), batches)
    assert [t for e in expected if isinstance(e, list) for t in e] == TIMES
    if batches_of == 1:  # per record, by hand: 7 s, 3 s and 19 s raise nothing
        assert [e for e in expected if isinstance(e, int)] == [8_000, 10_000, 11_000,
                                                               18_000, 23_000]
    for cut in range(len(batches) + 1):
        first = _open(node)
        out = _elements(first, batches[:cut])
        restored = _open(node, first.snapshot_state(1))
        out += _elements(restored, batches[cut:])
        assert out == expected, f"cut after batch {cut}"


def test_a_record_late_before_the_failure_is_still_possibly_late_after_it() -> None:
    """Without the saved event time the restored assigner would start from no watermark
    and pass 7 s downstream with no watermark before it: on time for every window."""
    node, _ = _assigner()
    first = _open(node)
    _elements(first, [pa.record_batch([pa.array([10_000, 12_000], TS)], names=["ts"])])
    restored = _open(node, first.snapshot_state(1))
    out = _elements(restored, [pa.record_batch([pa.array([7_000], TS)], names=["ts"])])
    assert out == [[7_000]]  # 10 s is already out: no watermark is sent again
    fresh = _open(node)
    assert _elements(fresh, [pa.record_batch([pa.array([7_000], TS)], names=["ts"])]) == \
        [[7_000], 5_000]
    # ...and the restored one sends nothing older than 10 s, then moves on
    more = _elements(restored, [pa.record_batch([pa.array([8_000, 15_000], TS)],
                                                names=["ts"])])
    assert more == [[8_000, 15_000], 13_000]


def test_rescaled_restore_starts_from_the_lowest_old_subtask() -> None:
    node, _ = _assigner()
    snapshots = []
    for subtask, times in enumerate([[10_000, 30_000], [9_000, 14_000]]):
        operator = _open(node, subtask=subtask, parallelism=2)
        _elements(operator, [pa.record_batch([pa.array(times, TS)], names=["ts"])])
        snapshots.append(operator.snapshot_state(1))
    merged = merge_snapshots(snapshots)
    for subtask in range(3):
        restored = _open(node, merged, subtask, 3)
        out = _elements(restored, [pa.record_batch([pa.array([t], TS)], names=["ts"])
                                   for t in (13_000, 20_000)])
        # from watermark 12 s (14 s - 2 s, the lower one): 13 s raises nothing (a fresh
        # assigner would send 11 s), 20 s raises it to 18 s (from 28 s it would not)
        assert out == [[13_000], [20_000], 18_000], subtask


def test_proctime_operator_sends_nothing_older_than_before_the_restore() -> None:
    node, batches = leaf(pa.table({"x": [1, 2, 3]}), 1)
    plan = ProctimeWatermarkExec(node, node.fields[0].ref(), 0.0)
    clock = iter([5_000, 6_000, 4_000, 6_500])
    first = ProctimeWatermarkOperator(plan, clock=lambda: next(clock))
    first.open(OperatorContext("proctime"))
    sent = [e.timestamp for b in batches[:2] for e in first.process_batch(0, b)
            if isinstance(e, Watermark)]
    assert sent == [4_999, 5_999]
    restored = ProctimeWatermarkOperator(plan, clock=lambda: next(clock))
    restored.open(OperatorContext("proctime"))
    restored.restore_state(first.snapshot_state(1))
    assert [e for e in restored.process_batch(0, batches[2]) if isinstance(e, Watermark)] == []
    assert [e.timestamp for e in restored.on_idle()] == [6_499]
