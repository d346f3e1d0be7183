"""How an aggregate's values spread over its groups, for predicates on them (HAVING).

A ``HAVING sum(x) > c`` keeps the groups whose sum passes ``c``; no statistic describes
such a sum, but its distribution follows from the argument's and the group size (the
central limit theorem). Rows fall into groups as balls into bins (``columns.py``), so a
group's size is about Poisson with mean ``n = input rows / groups``, and over the groups:

* ``count(*)`` (and ``count(x)``) has mean ``n`` and variance ``n``;
* ``sum(x)`` is a compound Poisson sum: mean ``n * mu``, variance ``n * (sigma^2 + mu^2)``
  (the spread of the group sizes adds to that of the values);
* ``avg(x)`` has mean ``mu`` and variance ``sigma^2 / n``;

where ``mu`` and ``sigma^2`` are the argument's mean and variance, taken from its
equi-depth histogram (uniform inside each bucket) or, without one, as uniform over
``[min, max]``. The fraction of groups in a range is then read from the normal
distribution of that mean and variance (``ranges.interval_fraction``). Other aggregates
(min, max, ...) keep their argument's own statistics (``estimator``).
"""

from __future__ import annotations

import math

from flowsql.optimizer.cardinality.columns import ColumnEstimate

#: (mean, standard deviation) of a normal distribution
Normal = tuple[float, float]


def value_moments(column: ColumnEstimate) -> tuple[float, float] | None:
    """``(mean, variance)`` of the column's values, None when neither a histogram nor
    min/max describes them."""
    bounds = column.histogram if len(column.histogram) >= 2 else (
        (column.low, column.high) if column.low is not None and column.high is not None
        else ())
    if len(bounds) < 2:
        return None
    buckets = list(zip(bounds[:-1], bounds[1:]))
    mean = sum((a + b) / 2 for a, b in buckets) / len(buckets)
    square = sum((a * a + a * b + b * b) / 3 for a, b in buckets) / len(buckets)
    return mean, max(square - mean * mean, 0.0)


def aggregate_normal(name: str, argument: ColumnEstimate | None,
                     group_size: float) -> Normal | None:
    """The normal approximation of aggregate ``name``'s values over groups of mean size
    ``group_size`` (see the module docstring); None for other aggregates or an argument
    without statistics."""
    n = max(group_size, 1.0)
    if name in ("count", "count_star"):
        return n, math.sqrt(n)
    if argument is None or name not in ("sum", "avg"):
        return None
    moments = value_moments(argument)
    if moments is None:
        return None
    mu, variance = moments
    if name == "sum":
        return n * mu, math.sqrt(n * (variance + mu * mu))
    return mu, math.sqrt(variance / n)


def normal_fraction(normal: Normal, start: float, stop: float) -> float:
    """Fraction of a normal distribution's mass in ``[start, stop)``."""
    mean, sd = normal
    if sd <= 0.0:
        return 1.0 if start <= mean < stop else 0.0
    return max(_cdf((stop - mean) / sd) - _cdf((start - mean) / sd), 0.0)


def _cdf(z: float) -> float:
    if math.isinf(z):
        return 1.0 if z > 0 else 0.0
    return 0.5 * math.erfc(-z / math.sqrt(2.0))
