"""The best plan found for a group under one requirement, with what it delivers and costs."""

from __future__ import annotations

from dataclasses import dataclass

from flowsql.optimizer.cost import Cost
from flowsql.planner.physical import PhysicalPlan
from flowsql.planner.properties import UNORDERED, Distribution, Ordering


@dataclass(frozen=True)
class Winner:
    """``plan`` delivers ``delivered`` and costs ``cost`` (its whole subtree);
    ``label`` names the alternative it came from (for EXPLAIN MEMO); ``order``: the order
    each subtask's rows come out in."""

    plan: PhysicalPlan
    delivered: Distribution
    cost: Cost
    label: str = ""
    order: Ordering = UNORDERED


@dataclass(frozen=True)
class Considered:
    """One alternative the search costed for a group: its label and total cost, and
    whether it won; ``enforcers``: what was put over it to meet the requirement (e.g.
    ``Exchange[hash]``, ``Sort``), bottom first."""

    label: str
    cost: float
    won: bool
    enforcers: tuple[str, ...] = ()
