"""The ``blackhole`` sink: accepts every row (insert-only or updating) and keeps nothing,
like Flink's blackhole connector -- for measuring a query without the cost of output. The
sink operator still counts the rows in ``records_written`` (at-least-once: after a restore
the replayed rows are counted again; the sink keeps no state)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from flowsql.runtime.connectors.sinks import TableSink


class BlackholeSink(TableSink):
    def write(self, batch: pa.RecordBatch, kinds: np.ndarray | None) -> None:
        return None
