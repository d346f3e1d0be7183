"""Whether a table's statistics still describe its files, and what replaces them if not.

Statistics with a fingerprint (Parquet footer figures and ANALYZE results of filesystem
tables) are checked against the files' current fingerprint: a directory listing and a
``stat`` per file, no reads. Stale statistics are replaced by what the footers say now
(origin "metadata", or "none" for CSV/JSON): analyzed figures are never used for files they
were not computed from, and the planner falls back to metadata until ANALYZE runs again.
"""

from __future__ import annotations

from flowsql.errors import DataError
from flowsql.planner.catalog import TableEntry, TableStatistics
from flowsql.runtime.connectors.filesystem import data_files, table_statistics
from flowsql.runtime.statistics.fingerprint import files_fingerprint

__all__ = ["refreshed_statistics"]


def refreshed_statistics(table: TableEntry) -> TableStatistics | None:
    """None while ``table``'s statistics match its files (or carry no fingerprint, or the
    table is not file-backed); otherwise the statistics its files give now."""
    stored = table.statistics
    if not stored.fingerprint or table.connector.lower() != "filesystem" or not table.path:
        return None
    try:
        current = files_fingerprint(data_files(table.path))
    except DataError:  # the path is gone: nothing is known any more
        return TableStatistics()
    if current == stored.fingerprint:
        return None
    return table_statistics(table.options, table.schema)
