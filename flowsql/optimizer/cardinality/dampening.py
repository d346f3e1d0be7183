"""Exponential backoff: combining factors that are probably correlated.

Multiplying the selectivities of a conjunction assumes the predicates independent, which
real data rarely are (a city implies its country); the product then underestimates, and
errors compound up a plan. As SQL Server's and DuckDB's estimators do, the factors are sorted
from the most selective and each further one counts with half the weight of the one before:
``s1 * s2^(1/2) * s3^(1/4) * s4^(1/8) ...``. The same backoff combines the distinct counts
of several GROUP BY keys and the key pairs of one join (a product of distinct counts is a
selectivity's reciprocal).
"""

from __future__ import annotations

from collections.abc import Iterable


def dampened_selectivity(selectivities: Iterable[float]) -> float:
    """The combined selectivity of conjuncts with the given selectivities (each in [0, 1])."""
    out, weight = 1.0, 1.0
    for s in sorted(selectivities):
        out *= min(max(s, 0.0), 1.0) ** weight
        weight /= 2
    return out


def dampened_product(counts: Iterable[float]) -> float:
    """The combined distinct count of several columns: the largest in full, the next by its
    square root, and so on (the reciprocal of :func:`dampened_selectivity` of their
    reciprocals)."""
    out, weight = 1.0, 1.0
    for n in sorted(counts, reverse=True):
        out *= max(n, 1.0) ** weight
        weight /= 2
    return out
