"""Table sinks: where ``INSERT INTO`` rows go, one module per connector.

Contract (called by
:class:`flowsql.runtime.operators.sink.connector_sink.SinkOperator`, in this order)::

    open_sink(table, context)
    write(batch, kinds)*   -- batch has exactly the table's columns (names and types);
                              kinds is None for insert-only input, else one int8 row
                              kind per row (changelog codes, see flowsql.runtime.changelog)
    finish()               -- end of input: everything written so far becomes visible
    close()                -- always last, also after a failure or a cancel; idempotent

A sink emits nothing into the dataflow. Exactly-once delivery across failures (two-phase
commit on checkpoint completion) is not part of this contract yet: a sink makes its output
visible at ``finish``/``close`` and when it rolls to a new file.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from flowsql.errors import CatalogError
from flowsql.planner.catalog import TableEntry
from flowsql.runtime.operator import OperatorContext


class TableSink:
    """Base class with safe defaults; see the module docstring for the call order."""

    def write(self, batch: pa.RecordBatch, kinds: np.ndarray | None) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        return None

    def close(self) -> None:
        return None


def open_sink(table: TableEntry, context: OperatorContext) -> TableSink:
    """The sink of ``table``'s connector, ready for ``write``."""
    from flowsql.runtime.connectors.implementations import IMPLEMENTATIONS, implementation

    sink = implementation(table).sink
    if sink is None:
        writable = [name for name, impl in IMPLEMENTATIONS.items() if impl.sink is not None]
        raise CatalogError(f"connector '{table.connector}' of table '{table.name}' cannot be "
                           f"written to (sinks: {', '.join(writable)})")
    return sink(table, context)
