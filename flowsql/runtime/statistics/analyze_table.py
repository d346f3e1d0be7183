"""ANALYZE TABLE's scan: read a bounded filesystem table once and measure it.

The table is read batch by batch through the filesystem connector (its engine types, at
most ``batch_size`` rows per batch), every requested column feeding a
:class:`ColumnProfile`, so memory stays bounded by the batch plus a few sketches per column
whatever the table's size. Row count, null counts, minima and maxima are exact; distinct
counts are HyperLogLog estimates; histograms come from a bounded sample (see
``equi_depth``).

The result is origin "analyzed" and carries the fingerprint of the files as they were
*before* the scan, so a file changed while scanning makes the statistics stale at once.
Columns not analyzed this time keep earlier analyzed figures when those describe the same
files, else their Parquet footer figures (Spark also merges per-column statistics).
"""

from __future__ import annotations

from dataclasses import dataclass

from flowsql.errors import ExecutionError
from flowsql.planner.catalog import TableEntry
from flowsql.planner.config.connectors import FILESYSTEM
from flowsql.planner.statistics import ANALYZED, ColumnStatistics, TableStatistics
from flowsql.runtime.connectors.filesystem import data_files, scan, table_statistics
from flowsql.runtime.statistics.column_profile import ColumnProfile
from flowsql.runtime.statistics.fingerprint import files_fingerprint

__all__ = ["AnalyzedTable", "analyze_table"]

#: rows per batch read while analyzing
ANALYZE_BATCH_SIZE = 1 << 17


@dataclass(frozen=True)
class AnalyzedTable:
    """The statistics to store, and the profile of every analyzed column (what ANALYZE
    shows the user, including string extremes the statistics do not keep)."""

    statistics: TableStatistics
    profiles: dict[str, ColumnProfile]


def is_analyzable(table: TableEntry) -> bool:
    """Whether ANALYZE can read ``table``: a filesystem table that is not a watched
    (unbounded) directory."""
    return table.connector.lower() == "filesystem" and \
        FILESYSTEM.unbounded_with not in table.options


def analyze_table(table: TableEntry, columns: list[str], scan_data: bool = True,
                  batch_size: int = ANALYZE_BATCH_SIZE) -> AnalyzedTable:
    """Measure ``columns`` (physical column names of ``table``) by reading the table; with
    ``scan_data`` False (NOSCAN) only the row count is measured, from Parquet footers where
    they have it, else by reading one column."""
    if not is_analyzable(table):
        raise ExecutionError(f"table '{table.name}' is not a bounded filesystem table")
    files = data_files(str(table.path))
    fingerprint = files_fingerprint(files)
    footer = table_statistics(table.options, table.schema)
    measured = columns if scan_data else []
    profiles = {name: ColumnProfile(table.schema.field(name).type, seed=index)
                for index, name in enumerate(measured)}
    rows = footer.row_count if not scan_data and footer.row_count is not None else None
    if rows is None:
        rows = 0
        # a scan of no columns has no rows to count: NOSCAN reads the first column
        read = measured or table.schema.names[:1]
        for batch in scan(table, read, [], batch_size):
            rows += batch.num_rows
            for name, column in zip(measured, batch.columns):
                profiles[name].add(column)
    earlier = table.statistics
    kept: dict[str, ColumnStatistics] = dict(footer.columns)
    if earlier.origin == ANALYZED and earlier.fingerprint == fingerprint:
        kept.update(earlier.columns)
    kept.update({name: profile.statistics() for name, profile in profiles.items()})
    ordered = {field.name: kept[field.name] for field in table.schema if field.name in kept}
    statistics = TableStatistics(rows, footer.total_bytes, dict(footer.distinct_bounds),
                                 ordered, origin=ANALYZED, fingerprint=fingerprint)
    return AnalyzedTable(statistics, profiles)
