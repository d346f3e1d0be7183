"""What EXPLAIN VERBOSE shows of the search: per operator its own estimated cost and the
properties it delivers (distribution and order, columns by name), and the alternatives
costed at the root with the one that won."""

from __future__ import annotations

from flowsql.optimizer.search.plan_search import SearchResult
from flowsql.planner.expressions import ColumnRef, SortKey
from flowsql.planner.physical import (
    FilterExec,
    LimitExec,
    PhysicalPlan,
    ProjectExec,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
    TopNExec,
)
from flowsql.planner.properties import Distribution


def operator_notes(result: SearchResult) -> dict[int, str]:
    """Per node of the chosen plan (by id): ``cost=`` its own estimated seconds (CPU,
    network and spill), ``dist=`` what it delivers, ``order=`` its output order."""
    names = _column_names(result.plan)
    notes: dict[int, str] = {}

    def visit(node: PhysicalPlan) -> tuple[SortKey, ...]:
        orders = [visit(child) for child in node.inputs]
        order = _order(node, orders[0] if orders else ())
        known = result.notes.get(id(node))
        parts = []
        if known is not None and known[0] is node:
            _, cost, delivered = known
            parts.append(f"cost={_seconds(cost.total)}")
            if cost.network:
                parts.append(f"network={_seconds(cost.network)}")
            if cost.spill:
                parts.append(f"spill={_seconds(cost.spill)}")
            parts.append(f"dist={_distribution(delivered, names)}")
        if order:
            parts.append(f"order=[{', '.join(str(k) for k in order)}]")
        notes[id(node)] = " ".join(parts)
        return order

    visit(result.plan)
    return notes


def memo_lines(result: SearchResult) -> list[str]:
    """The alternatives costed at the root, cheapest first, the winner marked; one line
    per alternative (the same plan reached under two requirements is shown once)."""
    shown: dict[tuple[str, str], bool] = {}
    for c in sorted(result.considered, key=lambda c: c.cost):
        key = (c.label, _seconds(c.cost))
        shown[key] = shown.get(key, False) or c.won
    return [f"{'*' if won else ' '} {label}: cost={cost}" for (label, cost), won in shown.items()]


def _seconds(value: float) -> str:
    return f"{value * 1000:.3g}ms"


def _column_names(plan: PhysicalPlan) -> dict[int, str]:
    names: dict[int, str] = {}
    for child in plan.inputs:
        names.update(_column_names(child))
    names.update({f.cid: f.name for f in plan.schema})
    return names


def _distribution(delivered: Distribution, names: dict[int, str]) -> str:
    if delivered.kind != "hash":
        return delivered.kind
    sets = (",".join(names.get(c, f"#{c}") for c in keys) for keys in delivered.keysets)
    return "hash(" + " | ".join(sets) + ")"


def _order(node: PhysicalPlan, below: tuple[SortKey, ...]) -> tuple[SortKey, ...]:
    """The order ``node``'s output keeps: a sort's or Top-N's keys; a sort aggregate's group
    fields; a merge join's left keys when it emits only matched or left rows; a filter,
    LIMIT or a projection passing the sorted columns through keeps its input's; anything
    else none."""
    if isinstance(node, (SortExec, TopNExec)):
        return node.keys
    if isinstance(node, SortAggregateExec):
        return tuple(SortKey(ColumnRef(f.cid, f.name, f.dtype)) for f in node.group_fields)
    if isinstance(node, SortMergeJoinExec):
        keeps = node.kind in ("inner", "left", "semi", "anti")
        return tuple(SortKey(k) for k in node.left_keys) if keeps else ()
    if isinstance(node, (FilterExec, LimitExec)):
        return below
    if isinstance(node, ProjectExec) and below:
        passed = {e.cid for e in node.exprs if isinstance(e, ColumnRef)}
        kept = all(isinstance(k.expr, ColumnRef) and k.expr.cid in passed for k in below)
        return below if kept else ()
    return ()
