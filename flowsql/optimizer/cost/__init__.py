"""The cost model: logical join costs for join enumeration, and the physical cost of an
operator (CPU, network, memory with spills, UDF calls) for the physical search.

``join_cost`` keeps its historical import path (``flowsql.optimizer.cost.join_cost``); the
join enumeration compares orders with it.
"""

from flowsql.optimizer.cost.constants import CostConstants, load_constants
from flowsql.optimizer.cost.logical import BUILD_WEIGHT, join_cost, node_cost, plan_cost
from flowsql.optimizer.cost.operator_cost import Cost, OperatorContext, operator_cost

__all__ = ["BUILD_WEIGHT", "Cost", "CostConstants", "OperatorContext", "join_cost",
           "load_constants", "node_cost", "operator_cost", "plan_cost"]
