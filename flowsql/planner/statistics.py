"""What the optimizer may know about a table before reading it: table and column statistics.

Statistics are plain data (numbers and tuples), so a catalog entry that holds them can be
written out as JSON and shipped to worker processes. Values of ordered columns (numbers,
decimals, dates, times, timestamps) are kept in one numeric form, :func:`statistic_number`,
so a range predicate's literal and a histogram bound compare as floats whatever the SQL type.

``origin`` says where the figures come from, which EXPLAIN reports so a reader can tell a
measured estimate from a guess:

* ``"analyzed"``: ``ANALYZE TABLE`` read the data (exact counts, sketched distinct counts,
  histograms);
* ``"metadata"``: file footers (Parquet row counts and per-row-group min/max/null counts);
* ``"none"``: nothing is known; every estimate over the table is a default guess.
"""

from __future__ import annotations

import datetime as dt
import decimal
from dataclasses import dataclass, field

import pyarrow as pa

ANALYZED, METADATA, NO_STATISTICS = "analyzed", "metadata", "none"


@dataclass(frozen=True)
class ColumnStatistics:
    """Statistics of one column; every figure may be unknown (None / empty).

    ``min_value`` / ``max_value`` and the ``histogram`` bounds are in the numeric form of
    :func:`statistic_number` (absent for strings and other unordered types). ``histogram``
    is equi-depth: ``len(histogram) - 1`` buckets, bucket ``i`` spans
    ``[histogram[i], histogram[i + 1]]`` and holds about the same number of non-null rows as
    every other bucket. ``distinct_count`` is an estimate (a sketch) unless ``ANALYZE`` counted
    exactly; ``avg_width`` is the mean size of a value in bytes (strings: their UTF-8 length).
    """

    null_count: int | None = None
    distinct_count: int | None = None
    min_value: float | None = None
    max_value: float | None = None
    histogram: tuple[float, ...] = ()
    avg_width: float | None = None


@dataclass(frozen=True)
class TableStatistics:
    """What the optimizer may know about a table before reading it."""

    row_count: int | None = None
    total_bytes: int | None = None
    #: column name -> an upper bound of its distinct values (from min/max of integer and
    #: date columns), which tells a 25-value foreign key from a primary key
    distinct_bounds: dict[str, int] = field(default_factory=dict)
    #: column name -> what is known about that column
    columns: dict[str, ColumnStatistics] = field(default_factory=dict)
    #: where the figures come from: "analyzed", "metadata" or "none" (see the module doc)
    origin: str = NO_STATISTICS
    #: identifies the data the statistics describe (for files: paths, sizes and modification
    #: times); statistics whose fingerprint no longer matches the data are stale
    fingerprint: str = ""


_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_DATE = dt.date(1970, 1, 1)


def statistic_number(value: object, dtype: pa.DataType) -> float | None:
    """``value`` (a Python value of SQL type ``dtype``) as the float statistics compare:
    numbers and decimals as themselves, dates as days since 1970-01-01, timestamps as
    microseconds since the epoch (naive, i.e. as written), times as microseconds since
    midnight, booleans as 0/1. None for NULL and for types without a useful order (strings,
    binaries, nested types)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float | decimal.Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        naive = value.replace(tzinfo=None) if value.tzinfo is not None else value
        return (naive - _EPOCH) / dt.timedelta(microseconds=1)
    if isinstance(value, dt.date):
        return float((value - _EPOCH_DATE).days)
    if isinstance(value, dt.time):
        return float(((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000
                     + value.microsecond)
    return None


def is_ordered_type(dtype: pa.DataType) -> bool:
    """Whether columns of ``dtype`` get min/max and histograms in numeric form."""
    return bool(pa.types.is_integer(dtype) or pa.types.is_floating(dtype)
                or pa.types.is_decimal(dtype) or pa.types.is_date(dtype)
                or pa.types.is_timestamp(dtype) or pa.types.is_time(dtype)
                or pa.types.is_boolean(dtype))
