"""Make every node output only the columns some node above reads.

Top-down with the set of required column ids; the root keeps its whole schema (the schema
check demands it). Scans read only required columns (plus those their filters read),
Projects and Aggregates drop unused outputs, Windows drop unused calls, and Projects that
merely pass columns through are removed -- except where column *order* matters: at the
root and under set operations, which match columns by position.

Every node keeps at least one column: a batch with no columns cannot carry a row count,
and ``SELECT count(*)`` still needs the rows.
"""

from __future__ import annotations

from flowsql.optimizer.columns import exprs_cids, is_passthrough
from flowsql.optimizer.context import OptimizerContext
from flowsql.planner.logical import (
    Aggregate,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    Scan,
    SetOp,
    Sort,
    TableFunctionJoin,
    Values,
    Window,
)


def prune_columns(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    return _prune(plan, plan.column_ids, ordered=True)


def _prune(plan: LogicalPlan, required: set[int], ordered: bool = False) -> LogicalPlan:
    """``plan`` producing at least ``required`` (in its original order if ``ordered``)."""
    if isinstance(plan, Scan):
        return _prune_scan(plan, required)
    if isinstance(plan, Values):
        return _prune_values(plan, required)
    if isinstance(plan, Project):
        return _prune_project(plan, required, ordered)
    if isinstance(plan, Aggregate):
        return _prune_aggregate(plan, required)
    if isinstance(plan, Window):
        return _prune_window(plan, required, ordered)
    if isinstance(plan, Join):
        return _prune_join(plan, required, ordered)
    if isinstance(plan, TableFunctionJoin):
        # the function's columns stay (it returns them all); its input keeps what is read
        # above and what the arguments read
        need = (required & plan.input.column_ids) | exprs_cids(plan.args)
        return _with_inputs(plan, (_prune(plan.input, need, ordered),))
    if isinstance(plan, Filter | Sort | Limit):
        need = required | exprs_cids(plan.expressions())
        return _with_inputs(plan, (_prune(plan.inputs[0], need, ordered),))
    if isinstance(plan, SetOp):
        inputs = tuple(_prune(c, c.column_ids, ordered=True) for c in plan.inputs)
        return _with_inputs(plan, inputs)
    inputs = tuple(_prune(c, c.column_ids, ordered=True) for c in plan.inputs)
    return _with_inputs(plan, inputs)


def _with_inputs(plan: LogicalPlan, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
    if all(a is b for a, b in zip(inputs, plan.inputs)):
        return plan
    return plan.with_inputs(inputs)


def _keep_indexes(cids: list[int], required: set[int]) -> list[int]:
    """Positions to keep: the required ones, or the first when none is required."""
    keep = [i for i, cid in enumerate(cids) if cid in required]
    return keep or [0]


def _prune_scan(scan: Scan, required: set[int]) -> LogicalPlan:
    need = required | exprs_cids(scan.filters)
    keep = _keep_indexes([f.cid for f in scan.fields], need)
    if len(keep) == len(scan.fields):
        return scan
    return Scan(scan.table, tuple(scan.fields[i] for i in keep), scan.filters, scan.alias)


def _prune_values(values: Values, required: set[int]) -> LogicalPlan:
    if not values.fields:
        return values
    keep = _keep_indexes([f.cid for f in values.fields], required)
    if len(keep) == len(values.fields):
        return values
    rows = tuple(tuple(row[i] for i in keep) for row in values.rows)
    return Values(tuple(values.fields[i] for i in keep), rows)


def _prune_project(plan: Project, required: set[int], ordered: bool) -> LogicalPlan:
    keep = (list(range(len(plan.fields))) if ordered
            else _keep_indexes([f.cid for f in plan.fields], required))
    exprs = tuple(plan.exprs[i] for i in keep)
    fields = tuple(plan.fields[i] for i in keep)
    child = _prune(plan.input, exprs_cids(exprs))
    if is_passthrough(Project(child, exprs, fields)) and (
            not ordered or [f.cid for f in child.schema] == [f.cid for f in fields]):
        return child
    if child is plan.input and len(keep) == len(plan.fields):
        return plan
    return Project(child, exprs, fields)


def _prune_aggregate(plan: Aggregate, required: set[int]) -> LogicalPlan:
    keep = [i for i, f in enumerate(plan.agg_fields) if f.cid in required]
    if not keep and not plan.group_exprs and plan.aggs:
        keep = [0]  # an aggregate without groups and outputs would have no columns
    aggs = tuple(plan.aggs[i] for i in keep)
    fields = tuple(plan.agg_fields[i] for i in keep)
    child = _prune(plan.input, exprs_cids((*plan.group_exprs, *aggs)))
    if child is plan.input and len(keep) == len(plan.aggs):
        return plan
    return Aggregate(child, plan.group_exprs, plan.group_fields, aggs, fields)


def _prune_window(plan: Window, required: set[int], ordered: bool) -> LogicalPlan:
    keep = [i for i, f in enumerate(plan.fields) if f.cid in required or ordered]
    if not keep:
        return _prune(plan.input, required)
    calls = tuple(plan.calls[i] for i in keep)
    fields = tuple(plan.fields[i] for i in keep)
    child_ids = plan.input.column_ids
    need = (required & child_ids) | exprs_cids(calls)
    child = _prune(plan.input, need, ordered)
    if child is plan.input and len(keep) == len(plan.calls):
        return plan
    return Window(child, calls, fields)


def _prune_join(plan: Join, required: set[int], ordered: bool) -> LogicalPlan:
    condition_ids = exprs_cids(plan.expressions())
    left_need = (required | condition_ids) & plan.left.column_ids
    right_need = condition_ids & plan.right.column_ids
    if plan.kind not in ("semi", "anti", "mark"):
        right_need |= required & plan.right.column_ids
    # A join's schema is its inputs' schemas side by side: where order matters, it matters
    # below the join too (except on the right of joins that do not output it).
    left = _prune(plan.left, left_need, ordered)
    right = _prune(plan.right, right_need, ordered and plan.kind not in ("semi", "anti", "mark"))
    return _with_inputs(plan, (left, right))
