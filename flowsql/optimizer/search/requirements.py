"""What a consumer requires of its input's distribution, in the search.

:class:`~flowsql.planner.properties.Distribution` is what a plan *delivers*; a requirement
needs a few more shapes than its partial order has, because the runtime runs a stage with
one parallelism (``runtime/jobgraph.py``) and a join needs both inputs hashed by the *same*
function of corresponding keys:

* ``any``: no requirement.
* ``single``: all rows on one subtask.
* ``spread``: on the job's subtasks (anything but ``single``): the probe side of a
  broadcast join, whose other input arrives on every subtask.
* ``hash`` with ``exact``: hashed on exactly ``keys``, in order (a partitioned join's
  inputs): a delivered key set equal to the keys' column ids, or a hash exchange on the
  key expressions directly below the consumer.
* ``hash`` without ``exact``: rows equal on ``keys`` together (an aggregate's groups): a
  delivered key set within the column ids of the keys that are plain columns, one
  subtask, or a hash exchange on the keys.
* ``broadcast``: every subtask holds all rows (only a broadcast exchange delivers it).

Besides its distribution a requirement may name an ``ordering`` each subtask's rows must
arrive in (a merge join's or sort aggregate's keys, an ORDER BY's): an interesting
property like the distribution, so the best plan is kept per (group, distribution,
ordering) and a sort placed for one consumer serves the next.

A sort costs more than the hash table it saves whenever the rows are many and the groups
or matches few, and without ANALYZE the estimates cannot tell which case a query is in. So
a merge join or sort aggregate asks for its order with ``sort_allowed`` off: the order
must come from its input's own plan (an ORDER BY in a subquery, a merge join or sort
aggregate below on the same keys), never from a sort placed just for it. Only an ORDER BY
(and a consumer whose order an ORDER BY or another sort-based operator above reuses, see
``join_alternatives``) has a sort placed for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from flowsql.planner.expressions import ColumnRef, Expr
from flowsql.planner.physical import ExchangeExec, PhysicalPlan
from flowsql.planner.properties import (
    BROADCAST,
    SINGLE,
    UNORDERED,
    Distribution,
    Ordering,
    OrderKey,
)


@dataclass(frozen=True)
class Required:
    """A requirement on an input's distribution (see the module docstring)."""

    kind: str
    keys: tuple[Expr, ...] = ()
    exact: bool = False
    #: the order each subtask's rows must arrive in (UNORDERED: any)
    ordering: Ordering = UNORDERED
    #: whether an enforcer may sort the rows into ``ordering`` (False: the input's plan
    #: must deliver it; see the module docstring)
    sort_allowed: bool = True

    def __str__(self) -> str:
        sorted_on = f" {self.ordering}" if self.ordering.keys else ""
        if sorted_on and not self.sort_allowed:
            sorted_on += " delivered"
        if self.kind != "hash":
            return self.kind + sorted_on
        keys = ", ".join(str(k) for k in self.keys)
        return f"hash{'=' if self.exact else ''}({keys}){sorted_on}"

    def sorted_on(self, ordering: Ordering, sort_allowed: bool = True) -> Required:
        """This requirement, with rows also arriving in ``ordering`` (sorted by an
        enforcer if need be, unless ``sort_allowed`` is False)."""
        return Required(self.kind, self.keys, self.exact, ordering, sort_allowed)

    def delivered_on(self, ordering: Ordering) -> Required:
        """This requirement, with rows arriving in ``ordering`` without a sort placed for
        it (see the module docstring)."""
        return self.sorted_on(ordering, sort_allowed=False)

    @property
    def distribution_only(self) -> Required:
        """This requirement without its ordering."""
        return Required(self.kind, self.keys, self.exact)

    @property
    def key_ids(self) -> tuple[int, ...] | None:
        """The keys' column ids when every key is a plain column, else None."""
        ids = tuple(k.cid for k in self.keys if isinstance(k, ColumnRef))
        return ids if len(ids) == len(self.keys) else None

    def met_by(self, plan: PhysicalPlan, delivered: Distribution) -> bool:
        """Whether ``plan``, delivering ``delivered``, meets this requirement's
        distribution (the ordering is checked by the enforcer)."""
        if self.kind == "any":
            return True
        if self.kind == "single":
            return delivered == SINGLE
        if self.kind == "spread":
            return delivered != SINGLE and delivered != BROADCAST
        if self.kind == "broadcast":
            return delivered == BROADCAST
        if isinstance(plan, ExchangeExec) and plan.kind == "hash" and plan.keys == self.keys:
            return True
        ids = self.key_ids
        if self.exact:
            return ids is not None and delivered.kind == "hash" and ids in delivered.keysets
        if delivered == SINGLE:
            return True
        columns = tuple(k.cid for k in self.keys if isinstance(k, ColumnRef))
        return bool(columns) and delivered.satisfies(Distribution.hash(columns))


ANY_INPUT = Required("any")
SINGLE_INPUT = Required("single")
SPREAD_INPUT = Required("spread")
BROADCAST_INPUT = Required("broadcast")


def hashed(keys: tuple[Expr, ...], exact: bool = False) -> Required:
    return Required("hash", keys, exact)


def ascending_on(keys: tuple[Expr, ...]) -> Ordering | None:
    """The order a merge join or sort aggregate requires of keys (ascending, NULLS LAST),
    when every key is a plain column (else None: no nameable order)."""
    if not all(isinstance(k, ColumnRef) for k in keys):
        return None
    return Ordering(tuple(OrderKey(k.cid) for k in keys if isinstance(k, ColumnRef)))
