"""Physical alternatives of an aggregate group.

* in place: the input already has the rows of each group together (hashed on a subset of
  the group columns, or on one subtask) -- asked of the input's group, so a join below
  partitioned on a group key serves it;
* a hash exchange on the group keys, then the aggregate (the enforcer of the above);
* a sort aggregate (group keys that are plain columns): as in place, over an input whose
  own plan delivers its rows sorted ascending on the group keys (a subquery's ORDER BY, a
  merge join or sort aggregate below on the same keys) -- never over a sort placed for it,
  which costs more than a hash table wherever the groups are few (TPC-H Q1, Q4) and the
  estimates cannot tell where they are not; no hash table, and its output is sorted on the
  group fields. It reduces each
  group with the hash aggregate's own machinery, so it runs every aggregate the hash one
  does (user-defined ones included);
* split: a partial aggregate on every subtask, an exchange on the group keys (a gather
  for a global aggregate), and the final aggregate (``aggregate_split``), for aggregates
  that decompose.
"""

from __future__ import annotations

from collections.abc import Iterator

from flowsql.optimizer.search.aggregate_split import split_aggregate, splittable
from flowsql.optimizer.search.enforcers import exchange
from flowsql.optimizer.search.memo import Memo
from flowsql.optimizer.search.requirements import (
    SINGLE_INPUT,
    SPREAD_INPUT,
    Required,
    ascending_on,
    hashed,
)
from flowsql.optimizer.search.winner import Winner
from flowsql.planner.expressions import ColumnRef
from flowsql.planner.physical import ExchangeExec, HashAggregateExec, SortAggregateExec
from flowsql.planner.properties import ANY, SINGLE, Distribution, Ordering, OrderKey


def renamed(delivered: Distribution, mapping: dict[int, int]) -> Distribution:
    """``delivered`` seen through a node that renames column ids; key sets using a column
    the node drops are forgotten."""
    if delivered.kind != "hash":
        return delivered
    return Distribution.hash(*(tuple(mapping[c] for c in keys) for keys in delivered.keysets
                               if all(c in mapping for c in keys)))


def aggregate_alternatives(memo: Memo, node: HashAggregateExec, required: Required
                           ) -> Iterator[Winner]:
    costing = memo.costing
    if not node.group_exprs:
        child = memo.need(node.input, SINGLE_INPUT)
        yield costing.on_top(node.with_inputs((child.plan,)), (child,), SINGLE,
                             "aggregate on one subtask")
    else:
        child = memo.need(node.input, hashed(node.group_exprs))
        yield costing.on_top(node.with_inputs((child.plan,)), (child,),
                             _in_place_output(node, child), "aggregate over grouped input")
        yield from _sort_aggregate(memo, node)
    if costing.parallelism <= 1 or not splittable(node):
        return
    spread = memo.best(node.input, SPREAD_INPUT)
    if spread is None:
        return
    split = split_aggregate(node)
    partial = costing.on_top(split.partial(spread.plan), (spread,), ANY)
    if node.group_exprs:
        moved = exchange(costing, partial, "hash", split.exchange_keys)
        delivered = Distribution.hash(tuple(f.cid for f in node.group_fields))
    else:
        moved = exchange(costing, partial, "gather")
        delivered = SINGLE
    top = moved
    for step in split.final(moved.plan):
        top = costing.on_top(step, (top,), delivered)
    yield Winner(top.plan, delivered, top.cost, "partial/final aggregate")


def _in_place_output(node: HashAggregateExec | SortAggregateExec, child: Winner) -> Distribution:
    """What an aggregate delivers over an input that has its groups together."""
    to_output = {e.cid: f.cid for e, f in zip(node.group_exprs, node.group_fields)
                 if isinstance(e, ColumnRef)}
    delivered = child.delivered
    if delivered == SINGLE or (to_output and delivered.satisfies(
            Distribution.hash(tuple(to_output)))):
        return renamed(delivered, to_output)
    plan = child.plan
    if isinstance(plan, ExchangeExec) and plan.kind == "hash" and plan.keys == node.group_exprs:
        return Distribution.hash(tuple(f.cid for f in node.group_fields))
    return renamed(delivered, to_output)


def _sort_aggregate(memo: Memo, node: HashAggregateExec) -> Iterator[Winner]:
    ordering = ascending_on(node.group_exprs)
    if ordering is None or not memo.costing.sort_based or any(a.function is not None for a in node.aggs):
        return  # a user-defined aggregate's errors name its group as the hash one does
    child = memo.best(node.input, hashed(node.group_exprs).delivered_on(ordering))
    if child is None:
        return  # no plan of the input delivers the order: sorting for it loses to hashing
    aggregate = SortAggregateExec(child.plan, node.group_exprs, node.group_fields, node.aggs,
                                  node.agg_fields, node.est_rows)
    order = Ordering(tuple(OrderKey(f.cid) for f in node.group_fields))
    yield memo.costing.on_top(aggregate, (child,), _in_place_output(node, child),
                              "sort aggregate over grouped input", order)
