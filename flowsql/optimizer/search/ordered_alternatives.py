"""Physical alternatives of operators that need rows together: a sort and an unpartitioned
window need all rows on one subtask; a Top-N or LIMIT either runs on one subtask or cuts
every subtask's rows to ``limit + offset`` first and gathers what is left; a window with
one PARTITION BY needs each partition on one subtask.

An ORDER BY on columns (a ``SortExec`` whose keys are plain columns) is a requirement on
its input rather than an operator of its own: its input's group is asked for all rows on
one subtask in that order, so a sort the search placed below (for a merge join or a sort
aggregate on the same keys) serves it, and only an input not in that order gets a sort.
A Top-N on columns may likewise become a LIMIT over an input already in its order."""

from __future__ import annotations

from collections.abc import Iterator

from flowsql.optimizer.search.enforcers import exchange
from flowsql.optimizer.search.memo import Memo
from flowsql.optimizer.search.requirements import (
    SINGLE_INPUT,
    SPREAD_INPUT,
    Required,
    hashed,
)
from flowsql.optimizer.search.winner import Winner
from flowsql.planner.expressions import ColumnRef
from flowsql.planner.physical import LimitExec, PhysicalPlan, SortExec, TopNExec, WindowExec
from flowsql.planner.properties import ANY, SINGLE, Ordering, OrderKey


def on_one_subtask(memo: Memo, node: PhysicalPlan, required: Required) -> Iterator[Winner]:
    """Every input on one subtask; so is the output."""
    inputs = tuple(memo.need(child, SINGLE_INPUT) for child in node.inputs)
    yield memo.costing.on_top(node.with_inputs(tuple(w.plan for w in inputs)), inputs, SINGLE,
                              f"{type(node).__name__} on one subtask")


def cut_alternatives(memo: Memo, node: TopNExec | LimitExec, required: Required
                     ) -> Iterator[Winner]:
    yield from on_one_subtask(memo, node, required)
    if isinstance(node, TopNExec):
        yield from _limit_over_ordered_input(memo, node)
    if memo.costing.parallelism <= 1:
        return
    spread = memo.best(node.input, SPREAD_INPUT)
    if spread is None:
        return
    keep = None if node.limit is None else node.limit + node.offset
    if isinstance(node, TopNExec):
        assert keep is not None
        cut: PhysicalPlan = TopNExec(spread.plan, node.keys, keep, 0, node.est_rows)
    elif keep is not None:
        cut = LimitExec(spread.plan, keep, 0, node.est_rows)
    else:
        cut = spread.plan
    below = spread if cut is spread.plan else memo.costing.on_top(cut, (spread,), ANY)
    gathered = exchange(memo.costing, below, "gather")
    yield memo.costing.on_top(node.with_inputs((gathered.plan,)), (gathered,), SINGLE,
                              f"{type(node).__name__} over per-subtask cuts")


def window_alternatives(memo: Memo, node: WindowExec, required: Required) -> Iterator[Winner]:
    partitions = {call.partition_by for call in node.calls}
    keys = next(iter(partitions)) if len(partitions) == 1 else ()
    if not keys:
        yield from on_one_subtask(memo, node, required)
        return
    wanted = hashed(keys)
    if wanted.key_ids is None:  # an expression key: only an exchange on it groups them
        wanted = hashed(keys, exact=True)
    child = memo.need(node.input, wanted)
    yield memo.costing.on_top(node.with_inputs((child.plan,)), (child,), child.delivered,
                              "window over partitioned input")


def _ordering(node: SortExec | TopNExec) -> Ordering | None:
    """The sort keys as an ordering of column ids, when every key is a plain column."""
    if not all(isinstance(k.expr, ColumnRef) for k in node.keys):
        return None
    return Ordering(tuple(OrderKey(k.expr.cid, k.ascending, k.nulls_first)
                          for k in node.keys if isinstance(k.expr, ColumnRef)))


def _limit_over_ordered_input(memo: Memo, node: TopNExec) -> Iterator[Winner]:
    """A Top-N whose input, on one subtask, already delivers its order -- a merge join or
    sort aggregate on its keys, say -- is a LIMIT over it (the cost picks it only when the
    order comes cheaper than the Top-N's heap)."""
    ordering = _ordering(node)
    if ordering is None:
        return
    child = memo.best(node.input, SINGLE_INPUT.delivered_on(ordering))
    if child is None:
        return  # a full sort just for this: the Top-N alone is cheaper
    limit = LimitExec(child.plan, node.limit, node.offset, node.est_rows)
    yield memo.costing.on_top(limit, (child,), SINGLE, "limit over ordered input", ordering)


def sort_alternatives(memo: Memo, node: SortExec, required: Required) -> Iterator[Winner]:
    """The input on one subtask in the sort's order (see the module docstring)."""
    ordering = _ordering(node)
    if ordering is None:
        yield from on_one_subtask(memo, node, required)
        return
    yield memo.need(node.input, SINGLE_INPUT.sorted_on(ordering))
