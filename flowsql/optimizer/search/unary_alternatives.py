"""Physical alternatives of row-by-row operators (filter, projection, window assignment,
a sink): they run where their input runs, so each passes the requirement it receives down
to its input (renamed through a projection) and also tries its input's cheapest plan with
an enforcer above itself -- filtering before an exchange moves fewer rows. Each passes on
the label of the alternative below it, so EXPLAIN names the algorithm that made the
difference. Each keeps its input's order (a projection renames it, up to the first column
it drops), so an ordering required above is asked of the input."""

from __future__ import annotations

from collections.abc import Iterator

from flowsql.optimizer.search.aggregate_alternatives import renamed
from flowsql.optimizer.search.memo import Memo
from flowsql.optimizer.search.requirements import ANY_INPUT, Required
from flowsql.optimizer.search.winner import Winner
from flowsql.planner.expressions import ColumnRef, Expr
from flowsql.planner.physical import PhysicalPlan, ProjectExec, SortExec
from flowsql.planner.properties import Ordering, OrderKey


def passthrough_alternatives(memo: Memo, node: PhysicalPlan, required: Required
                             ) -> Iterator[Winner]:
    columns = {f.cid for f in node.inputs[0].schema}
    if not all(k.cid in columns for k in required.ordering.keys):
        required = required.distribution_only  # sorted above the node, on what it adds
    for wanted in dict.fromkeys((required, ANY_INPUT)):
        child = memo.best(node.inputs[0], wanted)
        if child is not None:
            yield memo.costing.on_top(node.with_inputs((child.plan,)), (child,),
                                      child.delivered, child.label or type(node).__name__,
                                      child.order)


def project_alternatives(memo: Memo, node: ProjectExec, required: Required
                         ) -> Iterator[Winner]:
    to_output = {e.cid: f.cid for e, f in zip(node.exprs, node.fields)
                 if isinstance(e, ColumnRef)}
    wanted = [ANY_INPUT]
    below = _below(node, required)
    if below is not None:
        wanted.insert(0, below)
    for requirement in dict.fromkeys(wanted):
        child = memo.best(node.input, requirement)
        if child is None or (requirement.ordering.keys and isinstance(child.plan, SortExec)):
            continue  # a sort the projection's input needs only for this is placed above it
        yield memo.costing.on_top(node.with_inputs((child.plan,)), (child,),
                                  renamed(child.delivered, to_output),
                                  child.label or "Project",
                                  renamed_order(child.order, to_output))


def renamed_order(order: Ordering, mapping: dict[int, int]) -> Ordering:
    """``order`` seen through a node renaming column ids: its longest prefix of columns
    the node passes through."""
    keys: list[OrderKey] = []
    for key in order.keys:
        if key.cid not in mapping:
            break
        keys.append(OrderKey(mapping[key.cid], key.ascending, key.nulls_first))
    return Ordering(tuple(keys))


def _below(node: ProjectExec, required: Required) -> Required | None:
    """``required`` in terms of the projection's input, when its keys are columns the
    projection passes through (else None: it can be met only above the projection); an
    ordering on a computed column is left to a sort above the projection."""
    source = {f.cid: e for e, f in zip(node.exprs, node.fields) if isinstance(e, ColumnRef)}
    to_input = {cid: e.cid for cid, e in source.items() if isinstance(e, ColumnRef)}
    ordering = renamed_order(required.ordering, to_input)
    if len(ordering.keys) < len(required.ordering.keys):  # sorted above the projection
        ordering = Ordering()
    if required.kind != "hash":
        return required.sorted_on(ordering, required.sort_allowed)
    keys: list[Expr] = []
    for key in required.keys:
        if not (isinstance(key, ColumnRef) and key.cid in source):
            return None
        keys.append(source[key.cid])
    return Required("hash", tuple(keys), required.exact, ordering, required.sort_allowed)
