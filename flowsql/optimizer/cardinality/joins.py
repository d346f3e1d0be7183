"""Join sizes from the distinct counts of the keys.

An equi-join on one key pair ``a = b`` matches ``|L| * |R| / max(ndv(a), ndv(b))`` rows: under
the containment assumption the side with fewer values finds each of them on the other side,
and each value pairs ``|L| / ndv(a)`` rows with ``|R| / ndv(b)``. A distinct count that was
not measured is only a bound (by default the row count); it is then capped by the other
column's distinct values before filtering, so without statistics a foreign-key join still
gives the many side's rows scaled by the fraction of the key side that survived its filters.

Several key pairs form one key tuple whose domain is the dampened product of the pairs'
domains (``dampening.py``). When on both sides that product reaches the row count and no
column is a key of its table, the tuple is a composite key: the smaller side's tuples are
taken to be distinct and contained in the other side's, so a join of lineitem with partsupp
on (partkey, suppkey) matches each lineitem row once instead of multiplying the two key
selectivities.

A semi join keeps the fraction of left key values found on the right
(``min(1, ndv(right) / ndv(left))``), and an anti join the rest (at least
``ANTI_MIN_FRACTION``); a condition beyond the keys lowers the chance that a left row finds
one of its partners. Outer joins keep at least their preserved sides.
"""

from __future__ import annotations

from collections.abc import Sequence

from flowsql.optimizer.cardinality.columns import ColumnEstimate
from flowsql.optimizer.cardinality.dampening import dampened_product
from flowsql.optimizer.cardinality.defaults import ANTI_MIN_FRACTION

KeyPairs = Sequence[tuple[ColumnEstimate, ColumnEstimate]]


def key_domain(pairs: KeyPairs, left_rows: float, right_rows: float) -> float:
    """The number of distinct key tuples the join matches over (at least 1)."""
    if not pairs:
        return 1.0
    if len(pairs) == 1:
        return pair_domain(*pairs[0])
    joint = dampened_product(pair_domain(a, b) for a, b in pairs)
    if _bounded_by_rows([a for a, _ in pairs], left_rows) and \
            _bounded_by_rows([b for _, b in pairs], right_rows):
        # neither side's tuples are known to be fewer than its rows: the smaller side's
        # tuples are taken to be distinct and found on the other side (a composite key)
        joint = min(joint, max(min(left_rows, right_rows), 1.0))
    return max(joint, 1.0)


def pair_domain(left: ColumnEstimate, right: ColumnEstimate) -> float:
    """The domain of one key pair: the larger distinct count, where a count that was not
    measured (a bound or a default) is taken as at most the other column's values before
    its filters (a foreign key draws its values from the key it references)."""
    return max(_contained(left, right), _contained(right, left), 1.0)


def _contained(column: ColumnEstimate, other: ColumnEstimate) -> float:
    if column.measured:
        return column.distinct
    return min(column.distinct, other.base_distinct)


def _bounded_by_rows(columns: list[ColumnEstimate], rows: float) -> bool:
    """Whether the only bound known for the distinct tuples of ``columns`` is ``rows``: no
    column is a key of its table and the product of their distinct counts reaches it."""
    if any(c.unique for c in columns):
        return False
    return dampened_product(c.distinct for c in columns) >= rows


def key_tuples(counts: Sequence[float], rows: float) -> float:
    """Distinct tuples of one side's key columns (of the given distinct counts), at most
    its rows."""
    if len(counts) == 1:
        return min(counts[0], rows)
    return min(dampened_product(counts), rows)


def inner_rows(left_rows: float, right_rows: float, pairs: KeyPairs,
               residual: float) -> float:
    """Rows of an inner join on the key ``pairs`` and a further condition of selectivity
    ``residual`` (1 when there is none)."""
    return left_rows * right_rows / key_domain(pairs, left_rows, right_rows) * residual


def match_fraction(left_rows: float, right_rows: float, pairs: KeyPairs,
                   residual: float) -> float:
    """The fraction of left rows with at least one partner on the right."""
    if pairs:
        left_keys = key_tuples([_contained(a, b) for a, b in pairs], left_rows)
        right_keys = key_tuples([_contained(b, a) for a, b in pairs], right_rows)
        found = min(1.0, right_keys / max(left_keys, 1.0)) if left_keys > 0 else 0.0
        partners = right_rows / max(right_keys, 1.0)
    else:
        found, partners = (1.0 if right_rows >= 1 else right_rows), right_rows
    if residual >= 1.0:
        return found
    return found * (1.0 - (1.0 - residual) ** max(partners, 1.0))


def join_rows(kind: str, left_rows: float, right_rows: float, pairs: KeyPairs,
              residual: float) -> float:
    """Rows of a join of ``kind`` (see ``Join``)."""
    if kind in ("semi", "anti"):
        fraction = match_fraction(left_rows, right_rows, pairs, residual)
        if kind == "semi":
            return left_rows * fraction
        return left_rows * max(1.0 - fraction, ANTI_MIN_FRACTION)
    if kind in ("mark", "single"):
        return left_rows  # every left row once
    matched = inner_rows(left_rows, right_rows, pairs, residual)
    if kind == "left":
        return max(left_rows, matched)
    if kind == "right":
        return max(right_rows, matched)
    if kind == "full":
        return max(left_rows, right_rows, matched)
    return matched
