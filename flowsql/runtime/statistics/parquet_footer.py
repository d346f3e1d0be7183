"""Column statistics from Parquet footers: what a table's files say without being read.

Every row group of a Parquet file may record, per column, its null count and its minimum
and maximum. Summed and combined over all row groups of all files they give exact null
counts and exact (or, where a writer truncated long values, safely widened) extremes. A
figure is known only when *every* row group records it; one row group without it leaves the
figure unknown rather than wrong. Distinct counts are not in footers (the writers we read
do not fill them), so they stay unknown; ``distinct_bounds`` covers integer and date keys.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from flowsql.planner.statistics import ColumnStatistics, is_ordered_type, statistic_number

__all__ = ["footer_column_statistics"]


def footer_column_statistics(metadata: list[pq.FileMetaData], schema: pa.Schema
                             ) -> dict[str, ColumnStatistics]:
    """Per top-level column of ``schema`` (engine types), what the footers record: null
    count, and for ordered types min/max in ``statistic_number`` form."""
    figures = {field.name: _Figures() for field in schema}
    for meta in metadata:
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            seen: set[str] = set()
            for c in range(group.num_columns):
                column = group.column(c)
                name = column.path_in_schema
                if name not in figures:
                    continue  # a nested column's leaf
                seen.add(name)
                figures[name].add(column.statistics)
            for name in figures.keys() - seen:
                figures[name].add(None)
    return {field.name: figures[field.name].statistics(field.type) for field in schema}


class _Figures:
    """Null count and extremes of one column over the row groups seen so far."""

    def __init__(self) -> None:
        self.nulls: int | None = 0
        self.has_extremes = True
        self.low: Any = None
        self.high: Any = None

    def add(self, stats: pq.Statistics | None) -> None:
        if stats is None or not stats.has_null_count:
            self.nulls = None
        elif self.nulls is not None:
            self.nulls += stats.null_count
        if stats is None or not stats.has_min_max:
            # an all-NULL row group records no extremes and needs none
            all_null = stats is not None and stats.num_values == 0
            if not all_null:
                self.has_extremes = False
            return
        try:
            if self.low is None or stats.min < self.low:
                self.low = stats.min
            if self.high is None or stats.max > self.high:
                self.high = stats.max
        except TypeError:  # values of different kinds (e.g. bytes vs str): incomparable
            self.has_extremes = False

    def statistics(self, dtype: pa.DataType) -> ColumnStatistics:
        low = high = None
        if self.has_extremes and is_ordered_type(dtype):
            low, high = statistic_number(self.low, dtype), statistic_number(self.high, dtype)
        return ColumnStatistics(null_count=self.nulls, min_value=low, max_value=high)
