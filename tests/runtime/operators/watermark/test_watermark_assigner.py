"""The watermark assigner: batches split only before possibly-late records, watermarks in
between, chunking-independent; periodic emission on idle."""

from __future__ import annotations

import pyarrow as pa

from flowsql.planner.physical_streaming import WatermarkAssignerExec
from flowsql.runtime.events import Watermark
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.watermark.watermark_assigner import WatermarkAssignerOperator
from tests.harness.operators import leaf

TS = pa.timestamp("ms")


def _run(times: list[int | None], chunk: int, interval: int = 0) -> list[object]:
    """Elements out of the assigner: row times of each batch, and watermark values."""
    table = pa.table({"ts": pa.array(times, TS)})
    node, batches = leaf(table, chunk)
    assigner = WatermarkAssignerOperator(
        WatermarkAssignerExec(node, node.fields[0].ref(), 2_000, interval, 0.0))
    assigner.open(OperatorContext("assigner"))
    out: list[object] = []
    for batch in batches:
        for element in assigner.process_batch(0, batch):
            if isinstance(element, Watermark):
                out.append(element.timestamp)
            else:
                out.append([None if v is None else v.timestamp() * 1000
                            for v in element.column(0).to_pylist()])
    return out


def _seen(elements: list[object]) -> list[tuple[object, int | None]]:
    """Each record with the last watermark emitted before it (what downstream sees)."""
    seen: list[tuple[object, int | None]] = []
    current = None
    for element in elements:
        if isinstance(element, int):
            current = element
        else:
            seen.extend((t, current) for t in element)  # type: ignore[attr-defined]
    return seen


def _per_record_oracle(times: list[int | None], delay: int) -> list[int | None]:
    """The watermark in effect when each record arrives, one record at a time."""
    out, high = [], None
    for t in times:
        out.append(None if high is None else high - delay)
        if t is not None:
            high = t if high is None else max(high, t)
    return out


def test_per_record_watermarks_split_only_before_possibly_late_records() -> None:
    # delay 2: after 10 the watermark is 8; 7 arrives at watermark 8 (possibly late)
    out = _run([10_000, 12_000, 7_000, 13_000], chunk=4)
    assert out == [[10_000.0, 12_000.0], 10_000, [7_000.0, 13_000.0], 11_000]


def test_records_and_watermarks_do_not_depend_on_chunking() -> None:
    times: list[int | None] = [5_000, 1_000, 9_000, None, 6_000, 6_500, 20_000, 3_000, 21_000]
    oracle = _per_record_oracle(times, 2_000)
    for chunk in (1, 2, 3, 4, len(times)):
        elements = _run(times, chunk)
        seen = _seen(elements)
        assert [t for t, _ in seen] == [None if t is None else float(t) for t in times]
        for (t, watermark), exact in zip(seen, oracle):
            if t is not None and exact is not None and t <= exact:  # possibly late
                assert watermark == exact
            elif t is not None and watermark is not None:
                assert watermark <= (exact if exact is not None else watermark)
        marks = [e for e in elements if isinstance(e, int)]
        assert marks == sorted(set(marks)) and marks[-1] == 19_000


def test_null_rowtimes_pass_without_moving_the_watermark() -> None:
    assert _run([None, None], chunk=2) == [[None, None]]


def test_periodic_interval_emits_on_idle_after_the_interval() -> None:
    table = pa.table({"ts": pa.array([4_000, 9_000], TS)})
    node, batches = leaf(table, 2)
    assigner = WatermarkAssignerOperator(
        WatermarkAssignerExec(node, node.fields[0].ref(), 1_000, 3_600_000, 0.0))
    assigner.open(OperatorContext("assigner"))
    clock = [0]
    assigner._generator._clock = lambda: clock[0]  # deterministic processing time
    assigner._generator._last_emit_time = 0
    assert [type(e) for e in assigner.process_batch(0, batches[0])] == [pa.RecordBatch]
    assert list(assigner.on_idle()) == []
    clock[0] = 3_600_000
    assert [e.timestamp for e in assigner.on_idle()] == [8_000]  # type: ignore[union-attr]
