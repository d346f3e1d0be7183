"""A table scan that reads one subtask's share of the table.

Subtask ``i`` of ``p`` reads units ``i, i + p, i + 2p, ...`` of the scan's units
(``filesystem.scan_units``: Parquet row groups left after statistics pruning, CSV and JSON
files whole), the same list in every subtask because it depends only on the files and the
filters, so the shares are disjoint and together cover the table. Reading, filtering and
the saved position are those of the single-process scan (:class:`ScanOperator`): the
position is kept per unit, so a restore at another parallelism hands every unit, with the
rows already read from it, to the subtask that now owns it.
"""

from __future__ import annotations

from flowsql.runtime.connectors.filesystem import ScanUnit
from flowsql.runtime.operators.source.table_scan import ScanOperator


class SplitScanOperator(ScanOperator):
    """``produce`` yields only the rows of subtask ``context.subtask_index``."""

    def _share(self, units: list[ScanUnit]) -> list[ScanUnit]:
        return units[self.context.subtask_index::self.context.parallelism]
