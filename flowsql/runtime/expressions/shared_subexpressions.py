"""Common sub-expressions of several expressions compiled together, evaluated once per batch.

TPC-H Q1 sums ``l_extendedprice * (1 - l_discount)`` and, in another aggregate,
``l_extendedprice * (1 - l_discount) * (1 + l_tax)``: compiled one by one, the product is
computed twice for every batch. When expressions are compiled together
(:func:`flowsql.runtime.expressions.compile_exprs`), a sub-expression that occurs more than
once compiles to one node whose result is remembered for the batch it was computed for.

Contract:

* Only deterministic sub-expressions are shared: none that contains a call of a user
  function without the ``deterministic`` hint, nor a call without arguments (PROCTIME reads
  the clock). Such a call runs once per occurrence, as it would alone.
* Occurrences are the same when they are structurally equal (:func:`structural_key`):
  literals compare by type and exact value (``0.0`` is not ``-0.0``), columns by id.
* A remembered result belongs to one batch object: an occurrence evaluated on another batch
  (a CASE branch sees only the rows that reach it) computes afresh. Results are dropped by
  :meth:`SharedSubexpressions.release` after each batch, so no batch outlives its turn.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

import pyarrow as pa

from flowsql.planner.determinism import is_deterministic
from flowsql.planner.expressions import Call, Case, Cast, ColumnRef, Expr, Literal, UdfCall
from flowsql.runtime.expressions.registry import Datum, Node

__all__ = ["SharedSubexpressions", "structural_key"]


def structural_key(expr: Expr) -> Hashable:
    """A value equal for two expressions exactly when they compute the same thing."""
    if isinstance(expr, Literal):
        # repr keeps what == forgets: -0.0 and 0.0, True and 1, 1.0 and 1
        return ("literal", str(expr.dtype), type(expr.value).__name__, repr(expr.value))
    if isinstance(expr, ColumnRef):
        return ("column", expr.cid)
    if isinstance(expr, Call):
        return ("call", expr.name, str(expr.dtype), *(structural_key(a) for a in expr.args))
    if isinstance(expr, Cast):
        return ("cast", str(expr.dtype), structural_key(expr.arg))
    if isinstance(expr, Case):
        return ("case", str(expr.dtype), *(structural_key(c) for c in expr.children()))
    if isinstance(expr, UdfCall):
        # the function object lives as long as the expressions being compiled
        return ("udf", id(expr.function), str(expr.dtype),
                *(structural_key(a) for a in expr.args))
    return ("other", id(expr))


def _shareable(expr: Expr) -> bool:
    """Worth sharing (it computes something) and safe to share (deterministic)."""
    return isinstance(expr, Call | Cast | Case | UdfCall) and _deterministic(expr)


def _deterministic(expr: Expr) -> bool:
    """``is_deterministic`` (no non-deterministic user function), and besides no call
    without arguments (PROCTIME reads the clock) and only node kinds compiled here."""
    if not is_deterministic(expr):
        return False
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Call) and not node.args:
            return False
        if not isinstance(node, Call | Cast | Case | UdfCall | ColumnRef | Literal):
            return False
        stack.extend(node.children())
    return True


class _Remembered:
    """The result of one shared node for the batch it was last computed for: one
    ``(batch, value)`` pair, read and replaced as a whole, so that a caller never pairs
    one batch with another batch's value."""

    __slots__ = ("entry",)

    def __init__(self) -> None:
        self.entry: tuple[pa.RecordBatch, Any] | None = None


class SharedSubexpressions:
    """The repeated deterministic sub-expressions of ``exprs`` and their compiled nodes."""

    def __init__(self, exprs: Iterable[Expr]) -> None:
        counts: dict[Hashable, int] = {}
        stack = list(exprs)
        while stack:
            expr = stack.pop()
            if _shareable(expr):
                key = structural_key(expr)
                counts[key] = counts.get(key, 0) + 1
            stack.extend(expr.children())
        self._repeated = {key for key, count in counts.items() if count > 1}
        self._nodes: dict[Hashable, Node] = {}
        self._memory: list[_Remembered] = []

    @property
    def any(self) -> bool:
        """Whether anything occurs more than once."""
        return bool(self._repeated)

    def key_of(self, expr: Expr) -> Hashable | None:
        """The key under which ``expr`` is shared, or None when it is compiled on its own."""
        if not self._repeated or not _shareable(expr):
            return None
        key = structural_key(expr)
        return key if key in self._repeated else None

    def node(self, key: Hashable) -> Node | None:
        """The node compiled for an earlier occurrence of ``key``."""
        return self._nodes.get(key)

    def share(self, key: Hashable, node: Node) -> Node:
        """``node`` (the first occurrence of ``key``), remembering its result per batch."""
        if node.constant:
            self._nodes[key] = node
            return node
        memory = _Remembered()
        self._memory.append(memory)
        run = node.run

        def remembered(batch: pa.RecordBatch) -> Datum:
            entry = memory.entry
            if entry is not None and entry[0] is batch:
                return entry[1]
            value = run(batch)
            memory.entry = (batch, value)
            return value

        shared = Node(remembered, node.dtype)
        self._nodes[key] = shared
        return shared

    def release(self) -> None:
        """Forget every remembered result (called after each batch)."""
        for memory in self._memory:
            memory.entry = None
