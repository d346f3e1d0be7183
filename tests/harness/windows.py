"""Drive a window aggregate like a source with ``WATERMARK FOR ts AS ts - delay`` at
auto-watermark-interval 0 would, plus a per-record reference model of Flink's semantics.

Events are ``(key, ts, value)`` in arrival order. ``run`` cuts them into batches of the
given sizes, attaches each row's arrival watermark, sends the generator's watermark after
each batch and ends the input; ``reference`` processes the same events one at a time in
plain Python, straight from the documented semantics, as an independent oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.window.window_aggregate import (
    LATE_RECORDS_DROPPED,
    WindowAggregateOperator,
)
from flowsql.runtime.operators.window.window_specs import (
    AggregateSpec,
    WindowAggregateSpec,
    WindowSpec,
)
from flowsql.runtime.time.watermarks import BoundedOutOfOrderness

Event = tuple[str | None, int, int | None]
SCHEMA = pa.schema([("k", pa.string()), ("ts", pa.int64()), ("v", pa.int64()),
                    ("wm", pa.int64())])
AGGS = (AggregateSpec("count_star", None, "cnt"), AggregateSpec("sum", 2, "total"),
        AggregateSpec("max", 2, "top"))


def spec(window: WindowSpec, max_parallelism: int = 128,
         aggregates: tuple[AggregateSpec, ...] = AGGS) -> WindowAggregateSpec:
    return WindowAggregateSpec(SCHEMA, 1, window, (0,), aggregates, watermark_column=3,
                               max_parallelism=max_parallelism)


def open_operator(window: WindowSpec, subtask: int = 0, parallelism: int = 1,
                  aggregates: tuple[AggregateSpec, ...] = AGGS
                  ) -> tuple[WindowAggregateOperator, OperatorContext]:
    operator = WindowAggregateOperator.from_spec(spec(window, aggregates=aggregates))
    context = OperatorContext("window", subtask_index=subtask, parallelism=parallelism)
    operator.open(context)
    return operator, context


def batches(events: Sequence[Event], sizes: Sequence[int], delay: int
            ) -> list[tuple[pa.RecordBatch, int | None]]:
    """(batch with arrival watermarks, watermark emitted after it) per chunk."""
    generator = BoundedOutOfOrderness(delay)
    out, start = [], 0
    for size in sizes:
        chunk = events[start:start + size]
        start += size
        if not chunk:
            continue
        ts = np.array([e[1] for e in chunk], np.int64)
        progress = generator.on_batch(ts)
        batch = pa.record_batch([pa.array([e[0] for e in chunk], pa.string()), pa.array(ts),
                                 pa.array([e[2] for e in chunk], pa.int64()),
                                 pa.array(progress.row_watermarks)], schema=SCHEMA)
        out.append((batch, progress.emit))
    return out


def feed(operator: WindowAggregateOperator, batch: pa.RecordBatch,
         watermark: int | None) -> list[pa.RecordBatch]:
    out = list(operator.process_batch(0, batch))
    if watermark is not None:
        out.extend(operator.process_watermark(watermark))
    return out


def rows(out: Sequence[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    if not out:
        return []
    table = pa.Table.from_batches(out)
    return [tuple(r.values()) for r in table.to_pylist()]


def run(window: WindowSpec, events: Sequence[Event], delay: int,
        sizes: Sequence[int] | None = None, aggregates: tuple[AggregateSpec, ...] = AGGS
        ) -> tuple[list[tuple[Any, ...]], int]:
    """(output rows in emission order, late records dropped)."""
    operator, context = open_operator(window, aggregates=aggregates)
    out: list[pa.RecordBatch] = []
    for batch, watermark in batches(events, sizes or [len(events)], delay):
        out.extend(feed(operator, batch, watermark))
    out.extend(operator.end_input(0))
    return rows(out), context.metrics[LATE_RECORDS_DROPPED]


def _count_sum_max(values: list[int | None]) -> tuple[Any, ...]:
    present = [v for v in values if v is not None]
    return len(values), sum(present) if present else None, max(present) if present else None


def reference(window: WindowSpec, events: Sequence[Event], delay: int,
              summary: Callable[[list[int | None]], tuple[Any, ...]] = _count_sum_max
              ) -> tuple[list[tuple[Any, ...]], int]:
    """Flink's semantics, one record at a time (watermark after every record);
    ``summary`` turns a window's values into its aggregates (default: those of AGGS)."""
    watermark = -(2**63)
    windows: dict[tuple[Any, int, int], list[int | None]] = {}
    out: list[tuple[Any, ...]] = []
    late = 0

    def fire(wm: int) -> None:
        for key in sorted((w for w in windows if w[2] - 1 <= wm),
                          key=lambda w: (w[2], w[1], w[0] is not None, w[0] or "")):
            out.append((key[0], key[1], key[2], *summary(windows.pop(key))))

    for key, ts, value in events:
        fire(watermark)
        if window.kind == "session":
            start, end = ts, ts + window.gap
            members = [w for w in windows if w[0] == key and w[1] <= end and start <= w[2]]
            merged_start = min([start] + [w[1] for w in members])
            merged_end = max([end] + [w[2] for w in members])
            if merged_end - 1 <= watermark:
                late += 1
            else:
                values = [value] + [v for w in members for v in windows.pop(w)]
                windows[(key, merged_start, merged_end)] = values
        else:
            joined = False
            for start, end in _fixed_windows(window, ts):
                if end - 1 > watermark:
                    windows.setdefault((key, start, end), []).append(value)
                    joined = True
            late += not joined
        watermark = max(watermark, ts - delay)
    fire(2**63 - 1)
    return out, late


def _fixed_windows(window: WindowSpec, ts: int) -> list[tuple[int, int]]:
    if window.kind == "tumble":
        start = ts - (ts - window.offset) % window.size
        return [(start, start + window.size)]
    if window.kind == "hop":
        last = ts - (ts - window.offset) % window.slide
        return [(s, s + window.size) for s in range(last - window.size + window.slide,
                                                    last + 1, window.slide)]
    start = ts - (ts - window.offset) % window.size
    return [(start, end) for end in range(start + window.step, start + window.size + 1,
                                          window.step) if end > ts]
