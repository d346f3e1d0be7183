"""Join sizes from the distinct counts of the keys.

An equi-join on one key pair ``a = b`` matches ``|L| * |R| / max(dom(a), dom(b))`` rows, where
``dom`` is the domain of a key column (``columns.py``: the values it can still take): under
the containment assumption the smaller domain lies inside the larger, a value present on
both sides pairs ``|L| / ndv(a)`` rows with ``|R| / ndv(b)``, and a value of ``a`` is
present on the other side with probability ``ndv(b) / dom(b)``. Before any filter the domain
is the distinct count, which gives the textbook ``max(ndv(a), ndv(b))``; two sides thinned
at random by other predicates keep their domains, so they match no more often than their
unfiltered tables would. A domain that was not measured is only a bound (by default the row
count) and is capped by the other side's, so without statistics a foreign-key join gives the
many side's rows scaled by the fraction of the key side that survived its filters.

Several key pairs form one key tuple whose domain is the dampened product of the pairs'
domains (``dampening.py``). When on one side that product reaches the side's row count and
the other side's columns are not known to hold a key, the tuple is taken as a composite key
of the first side that the other side references: the domain is at most the first side's
tuples before filters thinned it, so a join of lineitem with partsupp on (partkey, suppkey) matches each lineitem row
once instead of multiplying the two key selectivities.

A semi join keeps the fraction of left key values found on the right (present on both
sides, as above; for several keys ``min(1, tuples(right) / tuples(left))``), and an anti
join the rest (at least
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
    lefts, rights = [a for a, _ in pairs], [b for _, b in pairs]
    referenced = []
    if _bounded_by_rows(lefts, left_rows) and not _is_key(rights):
        referenced.append(_tuple_domain(lefts, left_rows))
    if _bounded_by_rows(rights, right_rows) and not _is_key(lefts):
        referenced.append(_tuple_domain(rights, right_rows))
    if referenced:
        # a composite key: its tuples are taken to be distinct and the other side's tuples
        # to be drawn from them (a composite foreign key)
        joint = min(joint, max(min(referenced), 1.0))
    return max(joint, 1.0)


def _tuple_domain(columns: list[ColumnEstimate], rows: float) -> float:
    """The domain of a composite key whose side now holds ``rows`` tuples: the tuples its
    table had before filters thinned it, i.e. ``rows`` scaled by the most any of the key
    columns was thinned (its domain over its distinct values). A key side reduced by a
    filter on a joined table (partsupp joined with the parts named '%green%') references
    only part of the tuples the other side holds."""
    spread = max((c.domain_size / max(c.distinct, 1.0) for c in columns), default=1.0)
    return rows * max(spread, 1.0)


def _is_key(columns: list[ColumnEstimate]) -> bool:
    """Whether the columns are known to hold a key: one of them is a key of its table, or
    they are all the group keys of one aggregate."""
    if any(c.unique for c in columns):
        return True
    groups = [c.group_of for c in columns if c.group_of is not None]
    return any(groups.count(g) >= g[1] for g in set(groups))


def _bounded_by_rows(columns: list[ColumnEstimate], rows: float) -> bool:
    """Whether the columns look like a composite key: not known to be one, but the product
    of their distinct counts reaches the row count."""
    if _is_key(columns):
        return False
    return dampened_product(c.distinct for c in columns) >= rows


def pair_domain(left: ColumnEstimate, right: ColumnEstimate) -> float:
    """The domain of one key pair: the larger of the two columns' domains, where one that
    was not measured (a bound or a default) is taken as at most the other's (a foreign key
    draws its values from the key it references)."""
    return max(contained_domain(left, right), contained_domain(right, left), 1.0)


def contained_domain(column: ColumnEstimate, other: ColumnEstimate) -> float:
    """``column``'s domain, capped by ``other``'s when it was not measured."""
    if column.measured:
        return column.domain_size
    return min(column.domain_size, other.domain_size)


def matched_distinct(left: ColumnEstimate, right: ColumnEstimate) -> float:
    """Distinct key values present on both sides of ``left = right``."""
    a, b = contained_domain(left, right), contained_domain(right, left)
    both = left.distinct * right.distinct / max(a, b, 1.0)
    return min(both, left.distinct, right.distinct)


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
    if len(pairs) == 1:
        (a, b), = pairs
        left_keys = min(a.distinct, left_rows)
        found = matched_distinct(a, b) / left_keys if left_keys > 0 else 0.0
        partners = right_rows / max(min(b.distinct, right_rows), 1.0)
    elif pairs:
        left_keys = key_tuples([a.distinct for a, _ in pairs], left_rows)
        right_keys = key_tuples([b.distinct for _, b in pairs], right_rows)
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
