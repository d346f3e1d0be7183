"""How many operators of a plan share the memory budget (each gets an equal share).

Operators of one task run at the same time, pipelined: a hash join's build side is held
while the aggregate above it consumes the join's output. If the first to hold memory could
take the whole budget, the one after it would find none left and could not even start its
own spilling. So, as Flink splits its managed memory by fractions computed from the job
graph before it runs, the budget is divided up front: every operator that may hold memory
is counted, and a spilling operator keeps within ``budget / count``
(:meth:`MemoryBudget.share`). Operators that cannot spill still answer only to the whole
budget.
"""

from __future__ import annotations

from flowsql.planner.physical import (
    ExchangeExec,
    HashAggregateExec,
    HashJoinExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    SetOpExec,
    SharedSubplanExec,
    SortExec,
    SortMergeJoinExec,
    TopNExec,
    WindowExec,
)

#: operators that hold data across batches (a sort aggregate holds one group: not counted)
MEMORY_HOLDERS = (HashAggregateExec, HashJoinExec, NestedLoopJoinExec, SetOpExec,
                  SharedSubplanExec, SortExec, SortMergeJoinExec, TopNExec, WindowExec)


def memory_consumers(plan: PhysicalPlan, stop_at_exchanges: bool = False) -> int:
    """The number of memory-holding operators in ``plan`` (at least 1). With
    ``stop_at_exchanges``, only those of the plan's own stage are counted (a stage task's
    plan ends at its exchanges: what lies below runs in other tasks)."""
    count = 0
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, MEMORY_HOLDERS):
            count += 1
        if stop_at_exchanges and isinstance(node, ExchangeExec):
            continue
        stack.extend(node.inputs)
    return max(1, count)
