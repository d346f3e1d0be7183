"""Equivalence classes of columns: which columns an inner-join block forces to be equal.

Within a block of inner joins and filters every conjunct must hold for each output row, so
``a = b`` and ``b = c`` make ``a``, ``b`` and ``c`` one class (``a = c`` holds too), and
``a = 5`` gives the whole class the constant 5. The classes are a union-find over column
ids fed with conjuncts:

* ``col = col`` between two columns of one Arrow type (different types are compared after a
  cast, and a cast is not an identity, so those stay ordinary predicates);
* ``col = constant`` where the constant reads no column, is not NULL and is deterministic.

Only columns take part: a column is computed once below the block, so repeating a predicate
over it never evaluates anything twice, even a non-deterministic UDF that produced it.
Expressions are never class members (``f(x) = y`` stays as written).
"""

from __future__ import annotations

from flowsql.planner import types as T
from flowsql.planner.expressions import Call, ColumnRef, Expr, Literal, UdfCall, column_ids, walk

_BOOL_EQ = "eq"


def is_deterministic(expr: Expr) -> bool:
    """False when ``expr`` calls a UDF declared non-deterministic (such a call must never be
    duplicated, reordered or folded)."""
    return not any(isinstance(e, UdfCall) and not e.function.hints.deterministic
                   for e in walk(expr))


def column_equality(conjunct: Expr) -> tuple[ColumnRef, ColumnRef] | None:
    """The two columns of ``a = b`` (same type, different columns), else None."""
    if not (isinstance(conjunct, Call) and conjunct.name == _BOOL_EQ):
        return None
    a, b = conjunct.args
    if (isinstance(a, ColumnRef) and isinstance(b, ColumnRef) and a.cid != b.cid
            and a.dtype.equals(b.dtype)):
        return a, b
    return None


def constant_equality(conjunct: Expr) -> tuple[ColumnRef, Expr] | None:
    """The column and the constant of ``col = constant`` (either order), else None."""
    if not (isinstance(conjunct, Call) and conjunct.name == _BOOL_EQ):
        return None
    a, b = conjunct.args
    if not isinstance(a, ColumnRef):
        a, b = b, a
    if not isinstance(a, ColumnRef) or column_ids(b) or not b.dtype.equals(a.dtype):
        return None
    if isinstance(b, Literal) and b.value is None:
        return None
    return (a, b) if is_deterministic(b) else None


def equality(a: Expr, b: Expr) -> Call:
    """The conjunct ``a = b``."""
    return Call(_BOOL_EQ, (a, b), T.BOOL)


class EquivalenceClasses:
    """A union-find over column ids; members keep the order they were first seen in, so
    everything derived from the classes is deterministic."""

    def __init__(self) -> None:
        self._parent: dict[int, int] = {}
        self._columns: dict[int, ColumnRef] = {}
        self._constants: dict[int, Expr] = {}

    @classmethod
    def from_conjuncts(cls, conjuncts: list[Expr]) -> EquivalenceClasses:
        classes = cls()
        for c in conjuncts:
            classes.add(c)
        return classes

    def add(self, conjunct: Expr) -> bool:
        """Record ``conjunct`` when it is a column or constant equality; True if it was."""
        pair = column_equality(conjunct)
        if pair is not None:
            self._union(*pair)
            return True
        constant = constant_equality(conjunct)
        if constant is not None:
            column, value = constant
            root = self._find(self._member(column))
            self._constants.setdefault(root, value)
            return True
        return False

    def find(self, cid: int) -> int | None:
        """The representative id of ``cid``'s class, None when ``cid`` is in none."""
        return self._find(cid) if cid in self._parent else None

    def constant(self, cid: int) -> Expr | None:
        """The constant every column of ``cid``'s class equals, if the conjuncts give one
        (the first seen when they give several: then no row qualifies anyway)."""
        root = self.find(cid)
        return None if root is None else self._constants.get(root)

    def classes(self) -> list[list[ColumnRef]]:
        """Every class of two or more columns, or of one column with a constant."""
        groups: dict[int, list[ColumnRef]] = {}
        for cid, column in self._columns.items():
            groups.setdefault(self._find(cid), []).append(column)
        return [members for root, members in groups.items()
                if len(members) > 1 or root in self._constants]

    def _member(self, column: ColumnRef) -> int:
        if column.cid not in self._parent:
            self._parent[column.cid] = column.cid
            self._columns[column.cid] = column
        return column.cid

    def _find(self, cid: int) -> int:
        root = cid
        while self._parent[root] != root:
            root = self._parent[root]
        while self._parent[cid] != root:  # path compression
            self._parent[cid], cid = root, self._parent[cid]
        return root

    def _union(self, a: ColumnRef, b: ColumnRef) -> None:
        ra, rb = self._find(self._member(a)), self._find(self._member(b))
        if ra == rb:
            return
        self._parent[rb] = ra
        if rb in self._constants:
            self._constants.setdefault(ra, self._constants.pop(rb))
