"""The optimizer: logical rewrites, cardinality and cost, and physical planning.

``optimize(plan, settings)`` runs the rewrite rules (``rules.RULES``) with a plan check
after each; ``plan_physical(plan, settings, ...)`` runs the physical passes
(``physical_passes.PHYSICAL_PASSES``: operator choice, INSERT INTO's sink, streaming
planning, exchanges, and a final sanity check); ``to_physical(plan, settings)`` is the first
of them alone, choosing the physical operators.
"""

from flowsql.optimizer.driver import OptimizedPlan, optimize
from flowsql.optimizer.physical_passes import plan_physical
from flowsql.optimizer.physical_planner import to_physical

__all__ = ["OptimizedPlan", "optimize", "plan_physical", "to_physical"]
