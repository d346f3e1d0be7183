"""The optimizer: logical rewrites, cardinality and cost, and physical planning.

``optimize(plan, settings)`` runs the rewrite rules (``rules.RULES``) with a plan check
after each; ``to_physical(plan, settings)`` chooses the physical operators.
"""

from flowsql.optimizer.driver import OptimizedPlan, optimize
from flowsql.optimizer.physical_planner import to_physical

__all__ = ["OptimizedPlan", "optimize", "to_physical"]
