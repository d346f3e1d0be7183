"""The join graph of one block of inner joins: relations, edges, and the conjuncts of a join.

A block is flattened into its leaves (relation ``i`` is bit ``1 << i`` of a set) and the
conjuncts of its conditions. Conjuncts are of three sorts:

* over one relation: they filter that leaf (pushdown normally put them there already);
* column equalities between relations: they feed the equivalence classes
  (:mod:`flowsql.optimizer.equivalence`), together with the column equalities each leaf
  already applies. Two relations holding columns of one class are adjacent, whether or not
  the query wrote that equality: ``a = b AND b = c`` joins the relations of ``a`` and ``c``;
* every other conjunct: an edge when it spans two relations, otherwise (three or more) a
  condition attached once all its relations are joined, never an edge.

The conditions a join gets: every ordinary conjunct that needs both sides, and for each
class with columns on both sides exactly ONE equality between them (a spanning set: the
query's own equality when one connects the two sides, else a new one). The invariant that
makes one enough: inside every set of joined relations all columns of a class are already
equal -- each leaf is made so (an equality filter is added to a leaf that holds two columns
of a class it does not already equate), and a join with one equality per class keeps it so.
The final plan therefore never carries ``a = b``, ``b = c`` and ``a = c`` at one join, which
an estimator multiplying selectivities would count twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from flowsql.optimizer.equivalence import EquivalenceClasses, column_equality, equality
from flowsql.planner.expressions import ColumnRef, Expr, column_ids, conjoin, conjuncts
from flowsql.planner.logical import Filter, Join, LogicalPlan, Scan


def leaf_conjuncts(leaf: LogicalPlan) -> list[Expr]:
    """The conjuncts a leaf visibly applies at its top (scan filters or a Filter)."""
    if isinstance(leaf, Scan):
        return list(leaf.filters)
    if isinstance(leaf, Filter):
        return conjuncts(leaf.predicate)
    return []


class JoinGraph:
    """Relations, adjacency and join conditions of one flattened inner-join block."""

    def __init__(self, leaves: Sequence[LogicalPlan], preds: Sequence[Expr],
                 use_classes: bool = True) -> None:
        """``use_classes`` False: column equalities are ordinary conjuncts, the graph has
        only the edges the query wrote."""
        self._owner: dict[int, int] = {}
        for i, leaf in enumerate(leaves):
            for cid in leaf.column_ids:
                self._owner[cid] = i
        local: list[list[Expr]] = [[] for _ in leaves]
        self.leftover: list[Expr] = []  # conjuncts no join can take (no column of the block)
        self._ordinary: list[tuple[int, Expr]] = []
        self._class_equalities: list[tuple[int, Expr]] = []
        classes = EquivalenceClasses()
        for p in preds:
            mask = self._mask(p)
            if mask is None or mask == 0:
                self.leftover.append(p)
            elif mask & (mask - 1) == 0:
                local[mask.bit_length() - 1].append(p)
                if use_classes:
                    classes.add(p)
            elif use_classes and mask.bit_count() == 2 and column_equality(p) is not None:
                classes.add(p)
                self._class_equalities.append((mask, p))
            else:
                self._ordinary.append((mask, p))
        for leaf in leaves:
            for c in leaf_conjuncts(leaf) if use_classes else ():
                classes.add(c)
        # per class: the members with their relation, and the relations holding one
        self._classes: list[tuple[int, list[tuple[int, ColumnRef]]]] = []
        for members in classes.classes():
            owned = [(self._owner[m.cid], m) for m in members if m.cid in self._owner]
            mask = 0
            for i, _ in owned:
                mask |= 1 << i
            if mask.bit_count() >= 1 and len(owned) > 1:
                self._classes.append((mask, owned))
        self.leaves = [self._filtered_leaf(i, leaf, local[i]) for i, leaf in enumerate(leaves)]
        self.neighbors = self._adjacency(len(leaves))

    @property
    def size(self) -> int:
        return len(self.leaves)

    def _mask(self, p: Expr) -> int | None:
        """The set of relations ``p`` reads; None when it reads a column of no leaf."""
        mask = 0
        for cid in column_ids(p):
            owner = self._owner.get(cid)
            if owner is None:
                return None
            mask |= 1 << owner
        return mask

    def _filtered_leaf(self, index: int, leaf: LogicalPlan, local: list[Expr]) -> LogicalPlan:
        """The leaf with its own conjuncts and the class equalities it must add applied."""
        applied = EquivalenceClasses.from_conjuncts([*leaf_conjuncts(leaf), *local])
        added: list[Expr] = []
        for _, owned in self._classes:
            mine = [m for i, m in owned if i == index]
            for m in mine[1:]:
                if applied.find(m.cid) is None or applied.find(m.cid) != applied.find(mine[0].cid):
                    added.append(equality(mine[0], m))
                    applied.add(added[-1])
        predicate = conjoin([*local, *added])
        return leaf if predicate is None else Filter(leaf, predicate)

    def _adjacency(self, n: int) -> list[int]:
        neighbors = [0] * n
        masks = [m for m, _ in self._ordinary if m.bit_count() == 2]
        masks += [m for m, _ in self._class_equalities]
        for mask in masks:
            a, b = mask & -mask, mask & (mask - 1)
            neighbors[a.bit_length() - 1] |= b
            neighbors[b.bit_length() - 1] |= a
        for mask, _ in self._classes:
            rest = mask
            while rest:
                low = rest & -rest
                neighbors[low.bit_length() - 1] |= mask & ~low
                rest ^= low
        return neighbors

    def condition(self, left: int, right: int) -> list[Expr]:
        """The conjuncts of the join of relation sets ``left`` and ``right``."""
        both = left | right
        out = [p for mask, p in self._ordinary
               if mask & ~both == 0 and mask & ~left and mask & ~right]
        for mask, owned in self._classes:
            if not (mask & left and mask & right):
                continue
            written = next((p for m, p in self._class_equalities
                            if m & ~both == 0 and m & left and m & right
                            and self._same_class(p, owned)), None)
            if written is not None:
                out.append(written)
                continue
            a = next(m for i, m in owned if left >> i & 1)
            b = next(m for i, m in owned if right >> i & 1)
            out.append(equality(a, b))
        return out

    def _same_class(self, p: Expr, owned: list[tuple[int, ColumnRef]]) -> bool:
        ids = {m.cid for _, m in owned}
        return column_ids(p) <= ids

    def join(self, left_plan: LogicalPlan, left: int, right_plan: LogicalPlan, right: int,
             left_rows: float, right_rows: float) -> Join:
        """The join of two disjoint relation sets; the larger input goes left (the probe
        side of a hash join)."""
        condition = conjoin(self.condition(left, right))
        if left_rows < right_rows:
            left_plan, right_plan = right_plan, left_plan
        return Join(left_plan, right_plan, "inner" if condition is not None else "cross",
                    condition)


def is_inner_join(plan: LogicalPlan) -> bool:
    """Whether ``plan`` belongs to a block of inner joins (inner or cross). A lookup join
    does not: its right side is the table looked up, whatever the costs say."""
    return isinstance(plan, Join) and plan.kind in ("inner", "cross") and not plan.lookup


def flatten_inner_joins(plan: LogicalPlan, leaves: list[LogicalPlan],
                        preds: list[Expr]) -> None:
    """Append the leaves of the maximal inner-join block rooted at ``plan`` (left to right)
    to ``leaves`` and its join conditions' conjuncts to ``preds``."""
    if is_inner_join(plan):
        assert isinstance(plan, Join)
        preds.extend(conjuncts(plan.condition))
        flatten_inner_joins(plan.left, leaves, preds)
        flatten_inner_joins(plan.right, leaves, preds)
    else:
        leaves.append(plan)
