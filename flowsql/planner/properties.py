"""Physical properties: how the rows of a plan node are spread over its subtasks
(:class:`Distribution`) and in which order each subtask sees them (:class:`Ordering`).

A :class:`Distribution` is a value, used both for what a node *delivers* and for what a
consumer *requires*. ``delivered.satisfies(required)`` is a partial order ("same or
stricter"):

* ``ANY`` (no promise) is the weakest: every distribution satisfies an ANY requirement.
* ``SINGLE`` (all rows on one subtask) satisfies ANY, SINGLE and every HASH requirement:
  with one subtask, rows that agree on any keys are trivially together.
* ``HASH(keys)`` (rows with equal values of the column ids ``keys`` share a subtask)
  satisfies ANY and ``HASH(required)`` when one of its key sets is a non-empty subset of
  ``required``: rows equal on the required keys are equal on the subset, hence together.
  That subset rule is what spares a second shuffle when an aggregate groups by a join key
  and more columns. A node may know several equivalent key sets (an inner join's output is
  partitioned by its left keys and, equally, by its right keys); ``keysets`` holds them all.
  A requirement that names several key sets is met when each of them is: read only by its
  first, the order would not be transitive (hash(a) meets hash(a | b), which meets hash(b),
  but hash(a) does not meet hash(b)).
* ``BROADCAST`` (every subtask holds all rows) satisfies ANY and BROADCAST only.

A HASH requirement of this order means "co-located"; a join needs more (both inputs
partitioned by the *same* function of corresponding keys), which the distribution pass checks
on top of this order. Keys are column ids of the node's output schema, so a requirement means
the same thing in every node that carries those columns.
"""

from __future__ import annotations

from dataclasses import dataclass

ANY_KIND, SINGLE_KIND, HASH_KIND, BROADCAST_KIND = "any", "single", "hash", "broadcast"


@dataclass(frozen=True)
class Distribution:
    """``kind`` is any / single / hash / broadcast; ``keysets`` is non-empty exactly for
    hash, each key set a tuple of column ids in hashing order."""

    kind: str
    keysets: tuple[tuple[int, ...], ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in (ANY_KIND, SINGLE_KIND, HASH_KIND, BROADCAST_KIND):
            raise ValueError(f"unknown distribution kind '{self.kind}'")
        if (self.kind == HASH_KIND) != bool(self.keysets) or any(not k for k in self.keysets):
            raise ValueError("a hash distribution needs non-empty key sets, others none")

    @staticmethod
    def hash(*keysets: tuple[int, ...]) -> Distribution:
        """Hash on the first key set (also partitioned by any further, equivalent one);
        duplicates are dropped and an empty key set list gives ANY."""
        unique = tuple(dict.fromkeys(k for k in keysets if k))
        return Distribution(HASH_KIND, unique) if unique else ANY

    def satisfies(self, required: Distribution) -> bool:
        if required.kind == ANY_KIND or self == required:
            return True
        if self.kind == SINGLE_KIND:
            return required.kind in (SINGLE_KIND, HASH_KIND)
        if self.kind == HASH_KIND and required.kind == HASH_KIND:
            return all(any(set(keys) <= set(wanted) for keys in self.keysets)
                       for wanted in required.keysets)
        return False

    def __str__(self) -> str:
        if self.kind != HASH_KIND:
            return self.kind
        return "hash(" + " | ".join(",".join(f"#{c}" for c in k) for k in self.keysets) + ")"


ANY = Distribution(ANY_KIND)
SINGLE = Distribution(SINGLE_KIND)
BROADCAST = Distribution(BROADCAST_KIND)


@dataclass(frozen=True)
class OrderKey:
    """One sort key over a column id: ascending or not, NULLs first or last."""

    cid: int
    ascending: bool = True
    nulls_first: bool = False

    def __str__(self) -> str:
        order = "" if self.ascending else " desc"
        nulls = " nulls first" if self.nulls_first else ""
        return f"#{self.cid}{order}{nulls}"


@dataclass(frozen=True)
class Ordering:
    """The order of the rows each subtask emits: lexicographic on ``keys`` (empty: none).

    ``delivered.satisfies(required)`` when ``required``'s keys are a prefix of the delivered
    ones: rows sorted on (a, b) are sorted on (a). Like distributions, orderings name column
    ids of the node's output schema.
    """

    keys: tuple[OrderKey, ...] = ()

    def satisfies(self, required: Ordering) -> bool:
        return self.keys[:len(required.keys)] == required.keys

    def __str__(self) -> str:
        return "sorted(" + ", ".join(str(k) for k in self.keys) + ")" if self.keys else "none"


UNORDERED = Ordering()
