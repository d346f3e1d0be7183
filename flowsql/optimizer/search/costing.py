"""Costing a node placed over inputs whose best plans are known: the search builds every
alternative by stacking nodes (an algorithm, an exchange, a partial aggregate) on winners,
and each stacked node adds its own cost with the shares of rows its subtasks see."""

from __future__ import annotations

from dataclasses import dataclass, field

from flowsql.optimizer.cost import Cost, CostConstants, OperatorContext, operator_cost
from flowsql.optimizer.search.winner import Winner
from flowsql.planner.physical import PhysicalPlan
from flowsql.planner.properties import BROADCAST, SINGLE, UNORDERED, Distribution, Ordering


@dataclass(frozen=True)
class Costing:
    """The cost model's constants and where the plan runs: ``parallelism`` subtasks
    (1: the whole plan in one process), the memory budget of one subtask, and the
    largest side a join may replicate."""

    constants: CostConstants
    parallelism: int
    memory_budget: float
    #: most estimated rows of a side a join may broadcast (``optimizer.broadcast-threshold-
    #: rows`` times ten: below it the cost decides)
    broadcast_limit: float = float("inf")
    #: whether merge joins and sort aggregates are alternatives (not on Spark, which
    #: plans its own)
    sort_based: bool = True
    #: per node built: (the node, its own cost, what it delivers), for EXPLAIN
    notes: dict[int, tuple[PhysicalPlan, Cost, Distribution]] = field(
        default_factory=dict, compare=False, repr=False)

    def share(self, delivered: Distribution) -> float:
        """Fraction of a plan's rows one subtask holds when it delivers ``delivered``."""
        if self.parallelism <= 1 or delivered in (SINGLE, BROADCAST):
            return 1.0
        return 1.0 / self.parallelism

    def on_top(self, node: PhysicalPlan, inputs: tuple[Winner, ...], delivered: Distribution,
               label: str = "", order: Ordering = UNORDERED) -> Winner:
        """``node`` (already over the inputs' plans) delivering ``delivered`` (its rows in
        ``order``), costing its own work plus its inputs'."""
        context = OperatorContext(self.constants,
                                  tuple(self.share(w.delivered) for w in inputs),
                                  self.share(delivered), self.memory_budget)
        own = operator_cost(node, context)
        self.notes[id(node)] = (node, own, delivered)
        return Winner(node, delivered, sum((w.cost for w in inputs), Cost()) + own, label, order)
