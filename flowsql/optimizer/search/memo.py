"""The memo: one group per node of the plan the physical planner built from the optimized
logical plan (one per logical operator), and the best plan per (group, requirement).

``best(node, required)`` asks every physical alternative of the node's group for its plans
(each alternative asks its inputs' groups for what it needs of them, so requirements
propagate downward), puts an enforcer over those that do not meet ``required``, and keeps
the cheapest. A requirement reached twice -- an aggregate above a join asking the join's
group for a hash on a join key, which the join's partitioned alternative asks of its own
inputs too -- is answered from the memo, which is how a partitioning built for one
operator serves the next without a second exchange.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from flowsql.optimizer.search.costing import Costing
from flowsql.optimizer.search.enforcers import enforce
from flowsql.optimizer.search.requirements import Required
from flowsql.optimizer.search.winner import Considered, Winner
from flowsql.planner.physical import ExchangeExec, PhysicalPlan

#: the alternatives of a group: (memo, the group's node, the requirement) -> candidates
Alternatives = Callable[["Memo", PhysicalPlan, Required], Iterable[Winner]]


class Memo:
    """Best plans per (group, requirement); ``considered`` keeps, per group and
    requirement, every alternative costed (EXPLAIN MEMO shows the root's)."""

    def __init__(self, costing: Costing, alternatives: Alternatives) -> None:
        self.costing = costing
        self.alternatives = alternatives
        self.best_plans: dict[tuple[int, Required], Winner | None] = {}
        self.considered: dict[tuple[int, Required], tuple[Considered, ...]] = {}
        #: the groups' nodes, kept alive so their ids stay unique while the memo lives
        self.groups: dict[int, PhysicalPlan] = {}

    def best(self, node: PhysicalPlan, required: Required) -> Winner | None:
        """The cheapest plan of ``node``'s group meeting ``required`` (None: none can)."""
        key = (id(node), required)
        if key in self.best_plans:
            return self.best_plans[key]
        self.groups[id(node)] = node
        candidates: list[Winner] = []
        added: list[tuple[str, ...]] = []
        for candidate in self.alternatives(self, node, required):
            enforced = enforce(self.costing, candidate, required)
            if enforced is not None:
                candidates.append(enforced)
                added.append(_enforcers(enforced.plan, candidate.plan))
        winner = min(candidates, key=lambda w: w.cost.total, default=None)
        self.best_plans[key] = winner
        self.considered[key] = tuple(Considered(c.label, c.cost.total, c is winner, a)
                                     for c, a in zip(candidates, added))
        return winner

    def need(self, node: PhysicalPlan, required: Required) -> Winner:
        """``best`` for a requirement some alternative always meets (any, single, a hash
        exchange): a None here is a bug in an alternative."""
        winner = self.best(node, required)
        if winner is None:
            raise AssertionError(f"search: no plan of {type(node).__name__} meets {required}")
        return winner


def _enforcers(enforced: PhysicalPlan, candidate: PhysicalPlan) -> tuple[str, ...]:
    """The enforcers between ``enforced`` and the ``candidate`` plan below them, bottom
    first (an exchange by its kind)."""
    added: list[str] = []
    while enforced is not candidate and enforced.inputs:
        added.append(f"Exchange[{enforced.kind}]" if isinstance(enforced, ExchangeExec)
                     else type(enforced).__name__.removesuffix("Exec"))
        enforced = enforced.inputs[0]
    return tuple(reversed(added))
