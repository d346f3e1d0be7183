"""Which physical alternatives a group has, by the kind of its node.

Sources: a table scan is read by every subtask (each its share of the files) in a
parallel plan; VALUES on one subtask. A node kind without alternatives of its own runs
with every input on one subtask.
"""

from __future__ import annotations

from collections.abc import Iterator

from flowsql.optimizer.search.aggregate_alternatives import aggregate_alternatives
from flowsql.optimizer.search.join_alternatives import (
    hash_join_alternatives,
    nested_loop_alternatives,
)
from flowsql.optimizer.search.memo import Memo
from flowsql.optimizer.search.ordered_alternatives import (
    cut_alternatives,
    on_one_subtask,
    sort_alternatives,
    window_alternatives,
)
from flowsql.optimizer.search.requirements import Required
from flowsql.optimizer.search.set_op_alternatives import set_op_alternatives
from flowsql.optimizer.search.unary_alternatives import (
    passthrough_alternatives,
    project_alternatives,
)
from flowsql.optimizer.search.winner import Winner
from flowsql.planner.physical import (
    FilterExec,
    HashAggregateExec,
    HashJoinExec,
    LimitExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    ProjectExec,
    SetOpExec,
    SortExec,
    TableScanExec,
    TopNExec,
    WindowExec,
    WindowTableFunctionExec,
)
from flowsql.planner.physical_streaming import SinkExec
from flowsql.planner.properties import ANY, SINGLE


def alternatives(memo: Memo, node: PhysicalPlan, required: Required) -> Iterator[Winner]:
    """The candidate plans of ``node``'s group under ``required`` (before enforcers)."""
    if isinstance(node, TableScanExec):
        spread = memo.costing.parallelism > 1
        yield memo.costing.on_top(node, (), ANY if spread else SINGLE, "scan")
    elif not node.inputs:
        yield memo.costing.on_top(node, (), SINGLE, type(node).__name__)
    elif isinstance(node, (FilterExec, WindowTableFunctionExec, SinkExec)):
        yield from passthrough_alternatives(memo, node, required)
    elif isinstance(node, ProjectExec):
        yield from project_alternatives(memo, node, required)
    elif isinstance(node, HashJoinExec):
        yield from hash_join_alternatives(memo, node, required)
    elif isinstance(node, NestedLoopJoinExec):
        yield from nested_loop_alternatives(memo, node, required)
    elif isinstance(node, HashAggregateExec):
        yield from aggregate_alternatives(memo, node, required)
    elif isinstance(node, (TopNExec, LimitExec)):
        yield from cut_alternatives(memo, node, required)
    elif isinstance(node, SortExec):
        yield from sort_alternatives(memo, node, required)
    elif isinstance(node, WindowExec):
        yield from window_alternatives(memo, node, required)
    elif isinstance(node, SetOpExec):
        yield from set_op_alternatives(memo, node, required)
    else:
        yield from on_one_subtask(memo, node, required)
