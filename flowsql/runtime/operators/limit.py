"""Limit: skip ``offset`` rows, then pass at most ``limit`` rows and stop pulling."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from flowsql.planner.physical import LimitExec
from flowsql.runtime.operators.contract import Limiting


class LimitOperator(Limiting):
    """Streaming; sets ``satisfied`` once ``limit`` rows went out so the runner stops
    its input early. Input order is preserved (LIMIT after ORDER BY keeps the order)."""

    def __init__(self, node: LimitExec) -> None:
        self._to_skip = node.offset
        self._remaining = node.limit
        self.satisfied = node.limit == 0

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if self.satisfied:
            return ()
        skip = min(self._to_skip, batch.num_rows)
        self._to_skip -= skip
        batch = batch.slice(skip)
        if self._remaining is not None:
            batch = batch.slice(0, self._remaining)
            self._remaining -= batch.num_rows
            self.satisfied = self._remaining == 0
        return (batch,) if batch.num_rows else ()
