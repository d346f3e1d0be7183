"""Move every predicate as close to the data as it may legally go.

Conjuncts travel down with the rewrite: through Project (substituting the projected
expressions), Sort, Aggregate (only conjuncts over grouping columns, and never below an
aggregate without GROUP BY, which yields a row even over no input), Window (only conjuncts
over columns every call partitions by), set operations (into both sides, by position), and
joins:

* inner / cross: a conjunct over one side goes into that side, one over both becomes the
  join condition (so a comma list with WHERE equalities becomes inner joins);
* a conjunct with a non-deterministic user function stays where it is, and one over a
  non-deterministic projected or grouping expression stays above it (never duplicated);
* outer joins: conjuncts from above go only into the preserved side; conjuncts of the ON
  clause go only into the null-supplying side (an ON conjunct over the preserved side
  decides matching, not which preserved rows survive, so it stays);
* table function joins (LATERAL TABLE): conjuncts over the input's columns only go below
  (every output row of an input row carries that row's values, NULL-padded ones too);
  conjuncts reading the function's columns stay above;
* semi / anti / mark / single: like a left join (the right side only supplies matches);
  a semi join may also push ON conjuncts over its left side down. Null-aware joins keep
  their condition intact: its NULL semantics are the point.

At the bottom, conjuncts land in ``Scan.filters`` (the scan applies them exactly), or in a
Filter above the node that stopped them.
"""

from __future__ import annotations

from flowsql.optimizer.columns import expr_key
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.folding import fold, is_true
from flowsql.planner.determinism import is_deterministic
from flowsql.planner.expressions import (
    ColumnRef,
    Expr,
    column_ids,
    conjoin,
    conjuncts,
    replace_columns,
)
from flowsql.planner.logical import (
    Aggregate,
    Filter,
    Join,
    LogicalPlan,
    Project,
    Scan,
    SetOp,
    Sort,
    TableFunctionJoin,
    Window,
)


def push_down_filter(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    return _push(plan, [])


def _push(plan: LogicalPlan, preds: list[Expr]) -> LogicalPlan:
    """``plan`` with ``preds`` (conjuncts over its output) applied as low as possible."""
    preds = _dedupe(preds)
    held = [p for p in preds if not is_deterministic(p)]
    if held:  # a non-deterministic predicate stays where it is: moved, it sees other rows
        return _filter(_push(plan, [p for p in preds if is_deterministic(p)]), held)
    if isinstance(plan, Filter):
        return _push(plan.input, preds + conjuncts(plan.predicate))
    if isinstance(plan, Project):
        mapping = {f.cid: e for f, e in zip(plan.fields, plan.exprs)}
        # substituting a non-deterministic projection would evaluate it a second time
        fixed = {cid for cid, e in mapping.items() if not is_deterministic(e)}
        above = [p for p in preds if column_ids(p) & fixed]
        down = [fold(replace_columns(p, mapping)) for p in preds if not column_ids(p) & fixed]
        return _filter(plan.with_inputs((_push(plan.input, down),)), above)
    if isinstance(plan, Join):
        return _push_join(plan, preds)
    if isinstance(plan, Aggregate):
        return _push_aggregate(plan, preds)
    if isinstance(plan, Sort):
        return plan.with_inputs((_push(plan.input, preds),))
    if isinstance(plan, Window):
        return _push_window(plan, preds)
    if isinstance(plan, SetOp):
        return _push_set_op(plan, preds)
    if isinstance(plan, Scan):
        return _push_scan(plan, preds)
    if isinstance(plan, TableFunctionJoin):
        return _push_table_function(plan, preds)
    return _filter(_rebuild(plan), preds)


def _rebuild(plan: LogicalPlan) -> LogicalPlan:
    """``plan`` with pushdown applied inside its inputs (nothing pushed into them)."""
    inputs = plan.inputs
    new = tuple(_push(c, []) for c in inputs)
    return plan if all(a is b for a, b in zip(new, inputs)) else plan.with_inputs(new)


def _filter(plan: LogicalPlan, preds: list[Expr]) -> LogicalPlan:
    predicate = conjoin(preds)
    return plan if predicate is None else Filter(plan, predicate)


def _dedupe(preds: list[Expr]) -> list[Expr]:
    seen: set[str] = set()
    out = []
    for p in preds:
        for c in conjuncts(p):
            key = expr_key(c)
            if (key not in seen or not is_deterministic(c)) and not is_true(c):
                seen.add(key)
                out.append(c)
    return out


def _push_scan(scan: Scan, preds: list[Expr]) -> LogicalPlan:
    if not preds:
        return scan
    own = scan.column_ids
    inside = [p for p in preds if column_ids(p) <= own]
    outside = [p for p in preds if not column_ids(p) <= own]
    new = scan.with_expressions(tuple(_dedupe([*scan.filters, *inside]))) if inside else scan
    return _filter(new, outside)


def _push_aggregate(plan: Aggregate, preds: list[Expr]) -> LogicalPlan:
    groups = {f.cid: e for f, e in zip(plan.group_fields, plan.group_exprs)}
    down: list[Expr] = []
    stay: list[Expr] = []
    for p in preds:
        ids = column_ids(p)
        movable = all(is_deterministic(groups[i]) for i in ids & groups.keys())
        (down if groups and ids and ids <= groups.keys() and movable else stay).append(p)
    child = _push(plan.input, [replace_columns(p, groups) for p in down])  # type: ignore[arg-type]
    return _filter(plan.with_inputs((child,)), stay)


def _push_window(plan: Window, preds: list[Expr]) -> LogicalPlan:
    shared: set[int] | None = None
    for call in plan.calls:
        ids = {e.cid for e in call.partition_by if isinstance(e, ColumnRef)}
        shared = ids if shared is None else shared & ids
    down: list[Expr] = []
    stay: list[Expr] = []
    for p in preds:
        ids = column_ids(p)
        (down if shared and ids and ids <= shared else stay).append(p)
    return _filter(plan.with_inputs((_push(plan.input, down),)), stay)


def _push_table_function(plan: TableFunctionJoin, preds: list[Expr]) -> LogicalPlan:
    own = plan.input.column_ids
    down = [p for p in preds if column_ids(p) <= own]
    stay = [p for p in preds if not column_ids(p) <= own]
    return _filter(plan.with_inputs((_push(plan.input, down),)), stay)


def _push_set_op(plan: SetOp, preds: list[Expr]) -> LogicalPlan:
    sides = []
    for side in (plan.left, plan.right):
        mapping: dict[int, Expr] = {f.cid: s.ref() for f, s in zip(plan.fields, side.schema)}
        sides.append(_push(side, [replace_columns(p, mapping) for p in preds]))
    return plan.with_inputs(tuple(sides))


def _push_join(join: Join, preds: list[Expr]) -> LogicalPlan:
    left_ids, right_ids = join.left.column_ids, join.right.column_ids
    both = left_ids | right_ids
    to_left: list[Expr] = []
    to_right: list[Expr] = []
    on: list[Expr] = []
    above: list[Expr] = []
    kind = join.kind
    condition = conjuncts(join.condition)
    if kind in ("inner", "cross"):
        for c in preds + condition:
            ids = column_ids(c)
            if ids <= left_ids:
                to_left.append(c)
            elif ids <= right_ids:
                to_right.append(c)
            else:
                (on if ids <= both else above).append(c)
        kind = "inner" if on else "cross"
    elif kind == "full":
        above, on = preds, condition
    else:
        # ``preserved`` keeps all its rows; ``supplier`` only supplies matches.
        preserved, supplier = (right_ids, left_ids) if kind == "right" else (left_ids, right_ids)
        to_preserved: list[Expr] = []
        to_supplier: list[Expr] = []
        for p in preds:
            (to_preserved if column_ids(p) <= preserved else above).append(p)
        for c in condition:
            ids = column_ids(c)
            if join.null_aware or not ids:
                on.append(c)
            elif ids <= supplier:
                to_supplier.append(c)
            elif kind == "semi" and ids <= preserved:
                to_preserved.append(c)
            else:
                on.append(c)
        to_left, to_right = ((to_supplier, to_preserved) if kind == "right"
                             else (to_preserved, to_supplier))
    new = Join(_push(join.left, to_left), _push(join.right, to_right), kind, conjoin(on),
               join.mark, join.null_aware, join.lookup)
    return _filter(new, above)
