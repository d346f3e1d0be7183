"""Sanity check of sort orders: recompute the :class:`Ordering` every node delivers and check
the operators that rely on sorted input.

What a node delivers (per subtask; column ids of its output):

* a SortExec its keys, as far as they are columns (a key over an expression ends the
  order it can name); a TopNExec likewise;
* FilterExec, LimitExec and a forward exchange keep their input's order; a ProjectExec
  keeps it through the columns it passes on (renaming their ids), up to the first key it
  drops;
* a SharedSubplanExec keeps its input's order, and every ReuseSubplanExec of the same
  subplan delivers that order too, under its own column ids (each consumer reads the
  buffered output in the order the subplan produced it; columns line up by position);
* a SortMergeJoinExec its left keys, ascending NULLS LAST (its output keeps the left
  input's order, and the right rows without a match come last with NULL left keys); a
  SortAggregateExec its group fields, ascending NULLS LAST;
* everything else nothing: every other exchange interleaves its senders, a hash join or
  hash aggregate emits in hash order, a scan in file order.

What is required: a SortMergeJoinExec's left input sorted ascending NULLS LAST on its left
keys and its right input on its right keys; a SortAggregateExec's input on its group
expressions. A key is a column, or an order-preserving cast of one (numeric or temporal
widening, as the join planner casts keys to a common type). Because an exchange delivers no
order, a merge join above a hash exchange needs its sorts above the exchange.
"""

from __future__ import annotations

import pyarrow as pa

from flowsql.optimizer.sanity_check.naming import fail, node_name
from flowsql.planner.expressions import Cast, ColumnRef, Expr, SortKey
from flowsql.planner.physical import (
    ExchangeExec,
    FilterExec,
    LimitExec,
    PhysicalPlan,
    ProjectExec,
    ReuseSubplanExec,
    SharedSubplanExec,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
    TopNExec,
)
from flowsql.planner.properties import UNORDERED, Ordering, OrderKey
from flowsql.planner.schema import Schema

#: per shared subplan (by share id), the order its output has and the columns it has it in
_SharedOrders = dict[int, tuple[Ordering, Schema]]

__all__ = ["check_ordering", "delivered_ordering"]


def check_ordering(plan: PhysicalPlan) -> None:
    """Raise PlanError naming the first node whose input is not sorted as it requires."""
    _visit(plan, (), {})


def delivered_ordering(plan: PhysicalPlan) -> Ordering:
    """The order in which each subtask emits ``plan``'s rows (checking the plan below)."""
    return _visit(plan, (), {})


def _visit(node: PhysicalPlan, path: tuple[str, ...], shared: _SharedOrders) -> Ordering:
    """``shared`` gathers the shared subplans met so far; the SharedSubplanExec comes
    before its reuses (it is their first copy in pre-order, and copies are disjoint), so
    inputs visited left to right meet it first."""
    inner = (*path, node_name(node))
    inputs = [_visit(child, inner, shared) for child in node.inputs]
    if isinstance(node, SortMergeJoinExec):
        for side, keys, delivered in (("left", node.left_keys, inputs[0]),
                                      ("right", node.right_keys, inputs[1])):
            _require(node, path, f"its {side} input", keys, delivered)
        return _ascending(node.left_keys)
    if isinstance(node, SortAggregateExec):
        _require(node, path, "its input", node.group_exprs, inputs[0])
        return Ordering(tuple(OrderKey(f.cid) for f in node.group_fields))
    if isinstance(node, SortExec | TopNExec):
        return _sorted_on(node.keys)
    if isinstance(node, FilterExec | LimitExec):
        return inputs[0]
    if isinstance(node, ExchangeExec) and node.kind == "forward":
        return inputs[0]
    if isinstance(node, ProjectExec):
        return _renamed(inputs[0], {e.cid: f.cid for e, f in zip(node.exprs, node.fields)
                                    if isinstance(e, ColumnRef)})
    if isinstance(node, SharedSubplanExec):
        shared[node.share_id] = (inputs[0], node.schema)
        return inputs[0]
    if isinstance(node, ReuseSubplanExec) and node.share_id in shared:
        delivered, columns = shared[node.share_id]
        return _renamed(delivered, {a.cid: b.cid for a, b in zip(columns, node.fields)})
    return UNORDERED


def _require(node: PhysicalPlan, path: tuple[str, ...], what: str, keys: tuple[Expr, ...],
             delivered: Ordering) -> None:
    cids = [_column(k) for k in keys]
    if any(c is None for c in cids):
        raise fail(node, path, f"needs {what} sorted on "
                   f"{', '.join(str(k) for k in keys)}, which are not all columns")
    required = Ordering(tuple(OrderKey(c) for c in cids if c is not None))
    if not delivered.satisfies(required):
        raise fail(node, path, f"needs {what} sorted {required} (ascending, NULLS LAST) "
                   f"but it is sorted {delivered}")


def _ascending(keys: tuple[Expr, ...]) -> Ordering:
    """Ascending NULLS LAST on ``keys``, up to the first that is not a column."""
    out: list[OrderKey] = []
    for key in keys:
        cid = _column(key)
        if cid is None:
            break
        out.append(OrderKey(cid))
    return Ordering(tuple(out))


def _sorted_on(keys: tuple[SortKey, ...]) -> Ordering:
    out: list[OrderKey] = []
    for key in keys:
        cid = _column(key.expr)
        if cid is None:
            break
        out.append(OrderKey(cid, key.ascending, key.nulls_first))
    return Ordering(tuple(out))


def _renamed(delivered: Ordering, mapping: dict[int, int]) -> Ordering:
    out: list[OrderKey] = []
    for key in delivered.keys:
        if key.cid not in mapping:
            break
        out.append(OrderKey(mapping[key.cid], key.ascending, key.nulls_first))
    return Ordering(tuple(out))


def _column(key: Expr) -> int | None:
    """The column id ``key`` orders like: the column itself, or a column under a cast that
    keeps the order (numeric to numeric, temporal to temporal)."""
    while isinstance(key, Cast) and _keeps_order(key.arg.dtype, key.dtype):
        key = key.arg
    return key.cid if isinstance(key, ColumnRef) else None


def _keeps_order(source: pa.DataType, target: pa.DataType) -> bool:
    def numeric(t: pa.DataType) -> bool:
        return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)

    def temporal(t: pa.DataType) -> bool:
        return pa.types.is_date(t) or pa.types.is_timestamp(t)

    return (numeric(source) and numeric(target)) or (temporal(source) and temporal(target))
