"""What every rewrite rule may consult besides the plan: the session settings and the
cardinality estimator (shared so its memo survives from rule to rule); and where a rule
records the costed decisions it made, for EXPLAIN VERBOSE."""

from __future__ import annotations

from dataclasses import dataclass, field

from flowsql.optimizer.cardinality import CardinalityEstimator


@dataclass
class OptimizerContext:
    """Settings are the session's string settings; rules read their own keys only."""

    settings: dict[str, str] = field(default_factory=dict)
    estimator: CardinalityEstimator = field(default_factory=CardinalityEstimator)
    #: one line per costed decision, prefixed by the rule's name, in the order made
    notes: list[str] = field(default_factory=list)
