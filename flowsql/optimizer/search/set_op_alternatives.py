"""Physical alternatives of a set operation: both inputs on one subtask; UNION ALL on the
job's subtasks wherever its inputs are (a single-subtask input rebalanced); a distinct set
operation (UNION, INTERSECT, EXCEPT) with both inputs hashed on all their columns, so equal
rows meet."""

from __future__ import annotations

from collections.abc import Iterator

from flowsql.optimizer.search.enforcers import exchange
from flowsql.optimizer.search.memo import Memo
from flowsql.optimizer.search.ordered_alternatives import on_one_subtask
from flowsql.optimizer.search.requirements import ANY_INPUT, SPREAD_INPUT, Required
from flowsql.optimizer.search.winner import Winner
from flowsql.planner.physical import SetOpExec
from flowsql.planner.properties import ANY, Distribution


def set_op_alternatives(memo: Memo, node: SetOpExec, required: Required) -> Iterator[Winner]:
    yield from on_one_subtask(memo, node, required)
    if memo.costing.parallelism <= 1:
        return
    if node.kind == "union" and node.all:
        left, right = memo.need(node.left, SPREAD_INPUT), memo.need(node.right, SPREAD_INPUT)
        yield memo.costing.on_top(node.with_inputs((left.plan, right.plan)), (left, right),
                                  ANY, "union all on every subtask")
        return
    left = exchange(memo.costing, memo.need(node.left, ANY_INPUT), "hash",
                    tuple(f.ref() for f in node.left.schema))
    right = exchange(memo.costing, memo.need(node.right, ANY_INPUT), "hash",
                     tuple(f.ref() for f in node.right.schema))
    yield memo.costing.on_top(node.with_inputs((left.plan, right.plan)), (left, right),
                              Distribution.hash(tuple(f.cid for f in node.fields)),
                              "set operation hashed on all columns")
