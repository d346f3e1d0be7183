"""What the estimator knows about one column of a plan's output, and how it changes.

A :class:`ColumnEstimate` starts at a Scan from the table's statistics (a measured distinct
count, else a bound from file metadata, else a default) and travels up the plan: filters and
joins remove rows and with them distinct values, projections pass it on or derive a new one,
aggregates keep their group keys' values.

Distinct values shrink with the rows: keeping a fraction ``f`` of ``n`` rows spread evenly
over ``d`` values (``n / d`` rows each), a value survives unless all its rows go, so about
``d * (1 - (1 - f) ** (n / d))`` survive (the classic balls-into-bins estimate; PostgreSQL
and DuckDB use the same idea).

Two counts travel: ``distinct``, the values present, and ``domain``, the values the column can
still take. A predicate on the column itself (``x < 10``) cuts both; a predicate on another
column, or a join on another key, thins the rows at random and cuts only the values present.
Joins need the difference: two sides thinned at random share a value only by chance, so
their join matches ``|L| * |R| / domain``, while two sides cut to the same range keep
matching each other (``joins.py``).

``source`` identifies the base column the values come from (the id of its table's Scan
node and the column's name; None for computed values), and ``unique`` says the column is a
key of that table (its distinct count is about its row count; without a measured count,
a non-string column whose bound is the row count is presumed one): every column of the same
origin is then a function of it, which the GROUP BY and composite-key join estimates use.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pyarrow as pa

from flowsql.optimizer.cardinality.defaults import (
    DEFAULT_DISTINCT,
    STRING_DISTINCT_FRACTION,
    UNIQUE_FRACTION,
)
from flowsql.planner import types as T
from flowsql.planner.statistics import ColumnStatistics


@dataclass(frozen=True)
class ColumnEstimate:
    """``distinct``: estimated distinct non-null values (at least 1 unless the plan has no
    rows); ``measured``: the distinct count comes from statistics (not a bound or a
    default); ``null_fraction``: None when unknown; ``low``/``high``/``histogram``: as in
    :class:`ColumnStatistics` (numeric form), describing the base column (filters do not
    narrow them); ``dtype``: the column's type."""

    distinct: float
    dtype: pa.DataType
    measured: bool = False
    null_fraction: float | None = None
    low: float | None = None
    high: float | None = None
    histogram: tuple[float, ...] = ()
    source: tuple[int, str] | None = None
    unique: bool = False
    #: the values the column can still take (None: ``distinct``), see the module docstring
    domain: float | None = None
    #: for a group key of an aggregate: (the aggregate's id, its number of keys); all keys of
    #: one aggregate together are a key of its output
    group_of: tuple[int, int] | None = None
    #: for an aggregate's value: (mean, standard deviation) of its normal approximation
    #: over the groups (``aggregate_values.py``), which range predicates then read
    normal: tuple[float, float] | None = None

    @property
    def domain_size(self) -> float:
        """The values the column can still take (at least its distinct values)."""
        return self.distinct if self.domain is None else max(self.domain, self.distinct)

    @property
    def origin(self) -> int | None:
        """The Scan (by id) the values come from; None for computed values."""
        return self.source[0] if self.source is not None else None

    def with_distinct(self, distinct: float) -> ColumnEstimate:
        return replace(self, distinct=max(distinct, 0.0))

    def capped(self, rows: float) -> ColumnEstimate:
        """This estimate with at most ``rows`` distinct values."""
        return self if self.distinct <= rows else self.with_distinct(max(rows, 0.0))

    @property
    def discrete(self) -> bool:
        """Whether values are whole steps apart (integers, dates), so ``x <= c`` is
        ``x < c + 1``."""
        return bool(pa.types.is_integer(self.dtype) or pa.types.is_date(self.dtype))


def scan_column(dtype: pa.DataType, rows: float, stats: ColumnStatistics | None,
                bound: int | None, source: tuple[int, str]) -> ColumnEstimate:
    """The estimate of a base column of a table with ``rows`` rows, from its statistics
    (``stats``, may be None) and a distinct bound from file metadata (``bound``)."""
    stats = stats or ColumnStatistics()
    null_fraction = None
    if stats.null_count is not None and rows > 0:
        null_fraction = min(stats.null_count / rows, 1.0)
    low, high = stats.min_value, stats.max_value
    measured = stats.distinct_count is not None
    if stats.distinct_count is not None:
        distinct = float(stats.distinct_count)
    elif bound is not None:
        distinct = float(bound)
    elif low is not None and high is not None and \
            (pa.types.is_integer(dtype) or pa.types.is_date(dtype)):
        distinct = high - low + 1
    elif T.is_string(dtype):
        distinct = max(rows * STRING_DISTINCT_FRACTION, min(rows, DEFAULT_DISTINCT))
    else:
        distinct = rows
    distinct = max(min(distinct, rows), 1.0 if rows >= 1 else 0.0)
    # without a measured count, a non-string column as distinct as its rows is presumed a
    # key (the default for a column nothing is known about)
    unique = rows > 0 and distinct >= UNIQUE_FRACTION * rows and \
        (measured or not T.is_string(dtype))
    return ColumnEstimate(distinct, dtype, measured, null_fraction, low, high,
                          stats.histogram, source, unique, distinct)


def derived_column(dtype: pa.DataType, distinct: float) -> ColumnEstimate:
    """A computed column with ``distinct`` values and nothing else known."""
    return ColumnEstimate(max(distinct, 0.0), dtype)


def shrink_distinct(distinct: float, rows: float, fraction: float) -> float:
    """Distinct values left when a fraction ``fraction`` of ``rows`` rows (holding
    ``distinct`` values evenly) is kept at random (see the module docstring)."""
    if fraction >= 1.0 or distinct <= 0.0:
        return distinct
    if fraction <= 0.0:
        return 0.0
    per_value = max(rows / distinct, 1.0)
    return distinct * (1.0 - (1.0 - fraction) ** per_value)
