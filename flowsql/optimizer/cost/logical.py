"""The logical cost of a plan, for join enumeration: rows processed, with hash-table
builds weighted.

The cost model computes no selectivities (ENGINEERING.md habit 6): it combines row counts
the estimator gives it. A node's own cost excludes its children (as in Calcite); the cost of
a plan is the sum over its nodes.
"""

from __future__ import annotations

from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.planner.logical import Join, LogicalPlan

# Inserting a row into a hash table costs more than probing with one.
BUILD_WEIGHT = 2.0


def join_cost(left_rows: float, right_rows: float, out_rows: float) -> float:
    """Own cost of a hash join: probe the larger input, build the smaller, emit the output."""
    return (max(left_rows, right_rows) + BUILD_WEIGHT * min(left_rows, right_rows)
            + out_rows)


def node_cost(plan: LogicalPlan, estimator: CardinalityEstimator) -> float:
    """Own cost of one node: the rows it reads and emits."""
    out = estimator.rows(plan)
    if isinstance(plan, Join):
        return join_cost(estimator.rows(plan.left), estimator.rows(plan.right), out)
    return out + sum(estimator.rows(child) for child in plan.inputs)


def plan_cost(plan: LogicalPlan, estimator: CardinalityEstimator) -> float:
    """Total cost of a plan: the sum of its nodes' own costs."""
    return node_cost(plan, estimator) + sum(plan_cost(c, estimator) for c in plan.inputs)
