"""The fraction of a column's values that fall in a range.

A range is an :class:`Interval` over the numeric form of ``statistic_number``: the
comparisons of one column with constants, combined (``x >= 5 AND x < 9`` is one interval,
not two independent halves). With an equi-depth histogram the fraction is interpolated
linearly inside the buckets the bounds fall in (every bucket holds the same share of the
rows); without one, values are taken as uniform over ``[min, max]``; without either, the
default range selectivities apply.

Integers and dates are whole steps apart, so ``x <= c`` is ``x < c + 1`` and the column's
values span ``[min, max + 1)``: ``x BETWEEN 1 AND 5`` over 1..50 keeps 5/50, not 4/49.

An aggregate's value (``sum``, ``avg``, ``count`` over groups) has no histogram but a normal
approximation (``aggregate_values.py``); its ranges are read from that distribution.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass

from flowsql.optimizer.cardinality.aggregate_values import normal_fraction
from flowsql.optimizer.cardinality.columns import ColumnEstimate
from flowsql.optimizer.cardinality.defaults import BETWEEN_SELECTIVITY, RANGE_SELECTIVITY


@dataclass(frozen=True)
class Interval:
    """Values ``v`` with ``low < v`` (or ``<=`` when ``low_inclusive``) and likewise for
    ``high``; None is unbounded."""

    low: float | None = None
    high: float | None = None
    low_inclusive: bool = True
    high_inclusive: bool = True

    def intersect(self, other: Interval) -> Interval:
        low, low_inc = self.low, self.low_inclusive
        if other.low is not None and (low is None or other.low > low
                                      or (other.low == low and not other.low_inclusive)):
            low, low_inc = other.low, other.low_inclusive
        high, high_inc = self.high, self.high_inclusive
        if other.high is not None and (high is None or other.high < high
                                       or (other.high == high and not other.high_inclusive)):
            high, high_inc = other.high, other.high_inclusive
        return Interval(low, high, low_inc, high_inc)


def comparison_interval(op: str, value: float) -> Interval:
    """The interval of ``column op value`` for op in lt, lte, gt, gte."""
    return {"lt": Interval(high=value, high_inclusive=False),
            "lte": Interval(high=value),
            "gt": Interval(low=value, low_inclusive=False),
            "gte": Interval(low=value)}[op]


def interval_fraction(column: ColumnEstimate, interval: Interval) -> float:
    """Fraction of the column's non-null values inside ``interval``."""
    if interval.low is None and interval.high is None:
        return 1.0
    if column.normal is not None:
        return normal_fraction(column.normal,
                               _half_open(interval.low, not interval.low_inclusive, 0.0,
                                          -math.inf),
                               _half_open(interval.high, interval.high_inclusive, 0.0,
                                          math.inf))
    if column.low is None or column.high is None:
        both = interval.low is not None and interval.high is not None
        return BETWEEN_SELECTIVITY if both else RANGE_SELECTIVITY
    step = 1.0 if column.discrete else 0.0
    start = _half_open(interval.low, not interval.low_inclusive, step, -math.inf)
    stop = _half_open(interval.high, interval.high_inclusive, step, math.inf)
    if stop <= start:
        return 0.0
    bounds = _bounds(column, step)
    return max(_cdf(bounds, stop) - _cdf(bounds, start), 0.0)


def _half_open(value: float | None, shift: bool, step: float, unbounded: float) -> float:
    """A bound as the start (or stop) of a half-open ``[start, stop)`` range: on a discrete
    column ``x > c`` starts at ``c + 1`` and ``x <= c`` stops at ``c + 1``."""
    if value is None:
        return unbounded
    if step:
        return math.floor(value) + step if shift else math.ceil(value)
    return value


def _bounds(column: ColumnEstimate, step: float) -> tuple[float, ...]:
    """Bucket bounds spanning the column's values (half-open at the top for discrete
    types); two bounds (one bucket) when there is no histogram."""
    assert column.low is not None and column.high is not None
    bounds = column.histogram if len(column.histogram) >= 2 else (column.low, column.high)
    return (*bounds[:-1], bounds[-1] + step)


def _cdf(bounds: tuple[float, ...], x: float) -> float:
    """Fraction of values below ``x`` for equi-depth buckets between ``bounds``."""
    if x <= bounds[0]:
        return 0.0
    if x >= bounds[-1]:
        return 1.0
    buckets = len(bounds) - 1
    i = min(bisect_right(bounds, x) - 1, buckets - 1)
    width = bounds[i + 1] - bounds[i]
    inside = (x - bounds[i]) / width if width > 0 else 1.0
    return (i + inside) / buckets
