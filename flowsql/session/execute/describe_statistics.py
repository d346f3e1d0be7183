"""DESCRIBE EXTENDED: a table's columns with what its statistics know about each.

The per-column figures become extra columns of DESCRIBE's table; the table-level ones
(where the figures come from, row count, size) become rows named ``# ...`` at the end, as
Spark's DESCRIBE EXTENDED lists table details after the columns. Minima and maxima are
shown in the column's SQL type (statistics keep them as numbers: dates as days, ...).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa

from flowsql.planner.statistics import ColumnStatistics, TableStatistics

__all__ = ["with_statistics"]


def with_statistics(described: pa.Table, statistics: TableStatistics,
                    types: dict[str, pa.DataType]) -> pa.Table:
    """``described`` (name, type, null) with the statistics columns and rows added."""
    names = described.column("name").to_pylist()
    columns = [statistics.columns.get(name, ColumnStatistics()) for name in names]
    extra = {
        "null_count": pa.array([c.null_count for c in columns], pa.int64()),
        "distinct_count": pa.array([c.distinct_count for c in columns], pa.int64()),
        "min": pa.array([_shown(c.min_value, types[n]) for c, n in zip(columns, names)],
                        pa.string()),
        "max": pa.array([_shown(c.max_value, types[n]) for c, n in zip(columns, names)],
                        pa.string()),
        "avg_width": pa.array([c.avg_width for c in columns], pa.float64()),
        "histogram_buckets": pa.array([max(len(c.histogram) - 1, 0) for c in columns],
                                      pa.int64()),
    }
    table = described
    for key, values in extra.items():
        table = table.append_column(key, values)
    details = [("# statistics", statistics.origin),
               ("# row_count", _text(statistics.row_count)),
               ("# total_bytes", _text(statistics.total_bytes))]
    trailer = pa.table({key: pa.nulls(len(details), table.schema.field(key).type)
                        for key in table.column_names})
    trailer = trailer.set_column(0, "name", pa.array([d[0] for d in details], pa.string()))
    trailer = trailer.set_column(1, "type", pa.array([d[1] for d in details], pa.string()))
    return pa.concat_tables([table, trailer])


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


_EPOCH = dt.datetime(1970, 1, 1)


def _shown(value: float | None, dtype: pa.DataType) -> str | None:
    """A statistic's numeric form back in the column's SQL type, as text."""
    if value is None:
        return None
    if pa.types.is_date(dtype):
        return str(dt.date(1970, 1, 1) + dt.timedelta(days=int(value)))
    if pa.types.is_timestamp(dtype):
        return str(_EPOCH + dt.timedelta(microseconds=value))
    if pa.types.is_time(dtype):
        return str((_EPOCH + dt.timedelta(microseconds=value)).time())
    if pa.types.is_boolean(dtype):
        return "true" if value else "false"
    if pa.types.is_integer(dtype) or float(value).is_integer() and not \
            pa.types.is_floating(dtype) and not pa.types.is_decimal(dtype):
        return str(int(value))
    return repr(float(value))
