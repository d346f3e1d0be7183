"""Table scan of a ``nexmark`` table: its generated events, narrowed to the scanned columns
and filtered by the pushed-down predicates.

The operator is the datagen scan over a ``NexmarkTable`` instead of a ``DatagenTable``
(event-number chunks dealt to the subtasks, positions snapshotted and restored as datagen's
are). An unbounded nexmark table (no ``events.num``) runs only in streaming mode.
"""

from __future__ import annotations

from flowsql.planner.physical import TableScanExec
from flowsql.runtime.connectors.datagen import DatagenTable
from flowsql.runtime.connectors.nexmark import NexmarkTable
from flowsql.runtime.operators.source.datagen_scan import DatagenScanOperator


class NexmarkScanOperator(DatagenScanOperator):
    """See the module docstring."""

    connector = "nexmark"
    bounded_by = "'events.num'"

    @staticmethod
    def generator_table(node: TableScanExec) -> DatagenTable:
        # the source reads only rows(), total_rows and rows_per_second, which both have
        return NexmarkTable(node.table.schema, node.table.options)  # type: ignore[return-value]
