"""Small task kinds that exercise a cluster end to end: a generator, a counting sink, and a
task that fails on purpose. They are what a health check or a transport test deploys, with
no planner or operator involved."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.cluster.tasks import TaskContext
from flowsql.runtime.events import EndOfInput
from flowsql.runtime.partitioning import DEFAULT_MAX_PARALLELISM, split_batch_by_subtask

#: how often a task waiting for input checks whether it was cancelled
_POLL_S = 0.2


def generate(context: TaskContext) -> Mapping[str, Any]:
    """Emit ``batches`` batches of ``rows`` rows with an int64 column ``x`` numbering the rows
    of this subtask; with several outputs, rows go to ``hash(x)``'s output (a hash edge).
    ``batches: -1`` runs until cancelled; ``sleep_ms`` paces the batches."""
    batches, rows = int(context.config["batches"]), int(context.config["rows"])
    sleep_s = float(context.config.get("sleep_ms", 0)) / 1000
    offset = int(context.config.get("offset", 0))
    index = 0
    while index != batches and not context.cancelled.is_set():
        start = offset + index * rows
        batch = pa.record_batch({"x": pa.array(np.arange(start, start + rows, dtype=np.int64))})
        parts = split_batch_by_subtask(batch, [0], len(context.outputs),
                                       DEFAULT_MAX_PARALLELISM)
        for writer, part in zip(context.outputs, parts):
            if part.num_rows:
                writer.write(part)
        index += 1
        if sleep_s:
            time.sleep(sleep_s)
    return {"rows": index * rows}


def count(context: TaskContext) -> Mapping[str, Any]:
    """Read every input to its end; report the row count and the sum of column ``x``."""
    rows = total = 0
    while not context.inputs.finished and not context.cancelled.is_set():
        item = context.inputs.next(timeout=_POLL_S)
        if item is None or isinstance(item[1], EndOfInput):
            continue
        element = item[1]
        if isinstance(element, pa.RecordBatch):
            rows += element.num_rows
            total += int(pc.sum(element.column("x")).as_py() or 0)
    return {"rows": rows, "sum": total}


def fail(context: TaskContext) -> Mapping[str, Any]:
    """Raise ``message`` after ``delay_ms``: the failure path, on purpose."""
    time.sleep(float(context.config.get("delay_ms", 0)) / 1000)
    raise ValueError(str(context.config.get("message", "failing on purpose")))
