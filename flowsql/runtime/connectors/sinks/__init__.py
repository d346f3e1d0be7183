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


#: connectors that can be written to
SINK_CONNECTORS = ("print", "blackhole", "filesystem")


def open_sink(table: TableEntry, context: OperatorContext) -> TableSink:
    """The sink of ``table``'s connector, ready for ``write``."""
    connector = table.connector.lower()
    if connector == "print":
        from flowsql.runtime.connectors.sinks.print_sink import PrintSink
        return PrintSink(table, context)
    if connector == "blackhole":
        from flowsql.runtime.connectors.sinks.blackhole import BlackholeSink
        return BlackholeSink()
    if connector == "filesystem":
        from flowsql.runtime.connectors.sinks.filesystem import FileSink
        return FileSink(table, context)
    raise CatalogError(f"connector '{table.connector}' of table '{table.name}' cannot be "
                       f"written to (sinks: {', '.join(SINK_CONNECTORS)})")
