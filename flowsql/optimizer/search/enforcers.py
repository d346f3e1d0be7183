"""Enforcers: the exchange put over a winner that does not deliver what its consumer
requires, and only then (a plan that already meets the requirement is returned as is).

* ``single``: a gather.
* ``spread``: a rebalance of a single-subtask plan over the job's subtasks.
* ``broadcast``: a broadcast exchange (every subtask receives all rows).
* ``hash``: a hash exchange on the required keys; it delivers a hash on their column ids
  when every key is a plain column (else no nameable distribution, which only the consumer
  directly above it may rely on).

A required ordering the plan does not deliver is met by a sort (``SortExec``) over it,
above any exchange (an exchange keeps no order), so each subtask sorts its own rows --
unless the requirement forbids a sort placed for it (``Required.sort_allowed``): then the
plan does not qualify.
"""

from __future__ import annotations

from flowsql.optimizer.search.costing import Costing
from flowsql.optimizer.search.requirements import Required
from flowsql.optimizer.search.winner import Winner
from flowsql.planner.expressions import ColumnRef, Expr, SortKey
from flowsql.planner.physical import ExchangeExec, SortExec
from flowsql.planner.properties import ANY, BROADCAST, SINGLE, Distribution


def exchange(costing: Costing, winner: Winner, kind: str, keys: tuple[Expr, ...] = ()
             ) -> Winner:
    """``winner`` behind an exchange of ``kind`` (on ``keys`` for a hash exchange)."""
    node = ExchangeExec(winner.plan, kind, keys, winner.plan.est_rows)
    if kind == "gather":
        delivered = SINGLE
    elif kind == "broadcast":
        delivered = BROADCAST
    elif kind == "hash":
        ids = Required("hash", keys).key_ids
        delivered = Distribution.hash(ids) if ids is not None else ANY
    else:
        delivered = ANY
    return costing.on_top(node, (winner,), delivered, winner.label)


def enforce(costing: Costing, winner: Winner, required: Required) -> Winner | None:
    """``winner`` meeting ``required``: behind an exchange when it does not deliver the
    distribution, under a sort when it does not deliver the ordering; None when no
    exchange can make it (a broadcast plan is never re-spread)."""
    distributed = _distribute(costing, winner, required)
    if distributed is None or distributed.order.satisfies(required.ordering):
        return distributed
    if not required.sort_allowed:
        return None  # the order must come from the plan itself
    columns = {f.cid for f in winner.plan.schema}
    if not all(k.cid in columns for k in required.ordering.keys):
        return None  # an order on columns this plan does not have
    return sort(costing, distributed, required)


def sort(costing: Costing, winner: Winner, required: Required) -> Winner:
    """``winner`` under a sort on ``required``'s ordering (its column ids named from the
    plan's schema)."""
    columns = {f.cid: f for f in winner.plan.schema}
    keys = tuple(SortKey(ColumnRef(k.cid, columns[k.cid].name, columns[k.cid].dtype),
                         k.ascending, k.nulls_first) for k in required.ordering.keys)
    node = SortExec(winner.plan, keys, winner.plan.est_rows)
    return costing.on_top(node, (winner,), winner.delivered, winner.label, required.ordering)


def _distribute(costing: Costing, winner: Winner, required: Required) -> Winner | None:
    if required.met_by(winner.plan, winner.delivered):
        return winner
    if winner.delivered == BROADCAST:
        return None
    if required.kind == "single":
        return exchange(costing, winner, "gather")
    if required.kind == "spread":
        return exchange(costing, winner, "rebalance")
    if required.kind == "broadcast":
        return exchange(costing, winner, "broadcast")
    if required.kind == "hash":
        return exchange(costing, winner, "hash", required.keys)
    return None
