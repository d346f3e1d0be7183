"""Reduce a grouped subquery to the keys the outer query can match, with a semi join.

Decorrelation turns ``WHERE x = (SELECT min(c) FROM s WHERE s.k = outer.k)`` into a join of
the outer query with an Aggregate over all of ``s`` grouped by ``s.k``: every group is
computed, though only the keys of outer rows are ever matched. DuckDB's dependent join
avoids that by joining the subquery with the outer keys first (TPC-H Q2). The same effect
without evaluating the outer query twice: the outer key column ``k`` is produced by some
scan below the outer side, so its values at the join are among that scan's rows after the
scan's own filters (every node between passes the column through unchanged). A semi join of
the subquery's scan of ``s`` with a copy of that filtered scan, on ``s.k = k``, removes only
rows whose groups no outer row can match.

Where it applies: a join whose condition has ``g = k`` (plain equality, two columns) where
``g`` is a group key of an Aggregate on one side (under Projects and Filters) and that side
may lose non-matching rows -- either side of an inner join, the null-supplying side of a
left or right join, the right side of a semi or anti join (not a null-aware one: NOT IN
cares about NULLs that match nothing). Inside the aggregate's input the semi join goes right
on the scan producing the group key, reached only through Filters, pass-through Projects,
inner joins and the preserved / left side of outer, semi and anti joins: removing scan rows
there removes exactly the input rows of unmatched groups (a Window or a LIMIT in between
would change the kept rows, so the rule stops there). The reducer must have filters, or it
removes nothing. When the scan producing ``k`` has none but ``k`` passes an inner or semi
join of the outer side on ``k = x`` (TPC-H Q20: ``ps_partkey`` semi-joined to the parts named
'forest%'), every value of ``k`` at the top is a value of ``x`` there, so the filtered scan
producing ``x`` is the reducer instead.

Not in ``execution.runtime-mode`` = ``streaming``, where a semi join must be a window join.

Costed: the semi join is added only when the cost model (``cost.plan_cost`` over the
estimator's rows) finds the join cheaper with it, reducer scan included. The join is what is
costed, not the aggregate alone: fewer groups also make the join's hash table or probe
smaller (TPC-H Q17: the semi join costs about what it saves inside the aggregate, and the
join then builds or probes 6,000 estimated groups instead of 200,000).
"""

from __future__ import annotations

from flowsql.optimizer.cardinality import CardinalityEstimator
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.cost import plan_cost
from flowsql.optimizer.equivalence import column_equality, equality
from flowsql.optimizer.plan_window_aggregate import runtime_mode
from flowsql.planner.expressions import ColumnRef, conjuncts, replace_columns
from flowsql.planner.logical import (
    Aggregate,
    Filter,
    Join,
    LogicalPlan,
    Project,
    Scan,
    walk_plan,
)
from flowsql.planner.schema import Field


def reduce_by_semi_join(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    if runtime_mode(context.settings) == "streaming":
        return plan  # a streaming semi join is only a window join; nothing to gain there
    return _visit(plan, context.estimator)


def _visit(plan: LogicalPlan, estimator: CardinalityEstimator) -> LogicalPlan:
    inputs = tuple(_visit(c, estimator) for c in plan.inputs)
    if any(a is not b for a, b in zip(inputs, plan.inputs)):
        plan = plan.with_inputs(inputs)
    if isinstance(plan, Join):
        return _reduce_join(plan, estimator)
    return plan


def _reducible_sides(join: Join) -> tuple[str, ...]:
    """The sides of ``join`` whose rows matching nothing on the other side do not count."""
    if join.null_aware or join.mark is not None:
        return ()
    return {"inner": ("left", "right"), "left": ("right",), "right": ("left",),
            "semi": ("right",), "anti": ("right",)}.get(join.kind, ())


def _reduce_join(join: Join, estimator: CardinalityEstimator) -> LogicalPlan:
    for side in _reducible_sides(join):
        grouped, other = (join.left, join.right) if side == "left" else (join.right, join.left)
        for c in conjuncts(join.condition):
            pair = column_equality(c)
            if pair is None:
                continue
            g, k = pair if pair[0].cid in grouped.column_ids else (pair[1], pair[0])
            if g.cid not in grouped.column_ids or k.cid not in other.column_ids:
                continue
            reduced = _reduce_aggregate_side(grouped, g.cid, k, other)
            if reduced is None:
                continue
            inputs = (reduced, other) if side == "left" else (other, reduced)
            candidate = join.with_inputs(inputs)
            if plan_cost(candidate, estimator) < plan_cost(join, estimator):
                return candidate
    return join


def _reduce_aggregate_side(plan: LogicalPlan, cid: int, key: ColumnRef,
                           other: LogicalPlan) -> LogicalPlan | None:
    """``plan`` (Projects and Filters over an Aggregate grouped by ``cid``) with the
    aggregate's input reduced to ``key``'s values, or None when not possible."""
    if isinstance(plan, Filter):
        child = _reduce_aggregate_side(plan.input, cid, key, other)
        return None if child is None else plan.with_inputs((child,))
    if isinstance(plan, Project):
        source = _passed_through(plan, cid)
        if source is None:
            return None
        child = _reduce_aggregate_side(plan.input, source, key, other)
        return None if child is None else plan.with_inputs((child,))
    if not isinstance(plan, Aggregate):
        return None
    group = next((e for e, f in zip(plan.group_exprs, plan.group_fields) if f.cid == cid), None)
    if not isinstance(group, ColumnRef):
        return None
    found = _filtered_producer(other, key.cid)
    if found is None:
        return None
    reducer, reducer_key = _fresh_copy(*found)
    reduced_input = _semi_join_at_scan(plan.input, group.cid, reducer, reducer_key)
    if reduced_input is None:
        return None
    return plan.with_inputs((reduced_input,))


def _origin(plan: LogicalPlan, cid: int) -> tuple[Scan, int] | None:
    """The scan and its column whose values column ``cid`` of ``plan`` passes up unchanged
    (through Projects that copy a column, under a new id or not); None when some node
    computes it."""
    if isinstance(plan, Scan):
        return (plan, cid) if cid in plan.column_ids else None
    if isinstance(plan, Project):
        source = _passed_through(plan, cid)
        return None if source is None else _origin(plan.input, source)
    child = next((c for c in plan.inputs if cid in c.column_ids), None)
    return None if child is None else _origin(child, cid)


def _filtered_producer(other: LogicalPlan, cid: int) -> tuple[Scan, int] | None:
    """A scan with filters and its column holding every value column ``cid`` has at the top
    of ``other``: the scan producing ``cid``, or else (it has no filters) the scan producing
    ``x`` for an inner or semi join in ``other`` on ``cid = x``. That join lies on the way up
    from ``cid``'s scan (its condition reads ``cid``), so every row above it has ``cid``
    equal to a value of ``x`` from its filtered scan."""
    origin = _origin(other, cid)
    if origin is None:
        return None
    if origin[0].filters:
        return origin
    for node in walk_plan(other):
        if not (isinstance(node, Join) and node.kind in ("inner", "semi")
                and not node.null_aware and node.mark is None):
            continue
        for conjunct in conjuncts(node.condition):
            pair = column_equality(conjunct)
            if pair is None or cid not in (pair[0].cid, pair[1].cid):
                continue
            x = pair[1] if pair[0].cid == cid else pair[0]
            source = _origin(node, x.cid)
            if source is not None and source[0].filters:
                return source
    return None


def _passed_through(project: Project, cid: int) -> int | None:
    """The input column a Project outputs unchanged as ``cid``."""
    for e, f in zip(project.exprs, project.fields):
        if f.cid == cid:
            return e.cid if isinstance(e, ColumnRef) else None
    return None


def _fresh_copy(scan: Scan, key_cid: int) -> tuple[Scan, ColumnRef]:
    """Another scan of the same table with the same filters under new column ids."""
    fields = tuple(Field.fresh(f.name, f.dtype, f.nullable) for f in scan.fields)
    mapping = {old.cid: new.ref() for old, new in zip(scan.fields, fields)}
    filters = tuple(replace_columns(p, mapping) for p in scan.filters)  # type: ignore[arg-type]
    copy = Scan(scan.table, fields, filters, scan.alias)
    key = mapping[key_cid]
    assert isinstance(key, ColumnRef)
    return copy, key


def _semi_join_at_scan(plan: LogicalPlan, cid: int, reducer: Scan,
                       reducer_key: ColumnRef) -> LogicalPlan | None:
    """``plan`` with the scan producing ``cid`` semi-joined to ``reducer``; None when the way
    down passes a node where removing scan rows could change the rows kept."""
    if isinstance(plan, Scan):
        if cid not in plan.column_ids:
            return None
        column = next(f.ref() for f in plan.fields if f.cid == cid)
        if not column.dtype.equals(reducer_key.dtype):
            return None
        return Join(plan, reducer, "semi", equality(column, reducer_key))
    if isinstance(plan, Filter):
        child = _semi_join_at_scan(plan.input, cid, reducer, reducer_key)
        return None if child is None else plan.with_inputs((child,))
    if isinstance(plan, Project):
        source = _passed_through(plan, cid)
        if source is None:
            return None
        child = _semi_join_at_scan(plan.input, source, reducer, reducer_key)
        return None if child is None else plan.with_inputs((child,))
    if isinstance(plan, Join) and not plan.null_aware and plan.mark is None:
        sides = {"inner": (0, 1), "cross": (0, 1), "left": (0,), "semi": (0,), "anti": (0,),
                 "right": (1,)}.get(plan.kind, ())
        for i in sides:
            if cid in plan.inputs[i].column_ids:
                child = _semi_join_at_scan(plan.inputs[i], cid, reducer, reducer_key)
                if child is None:
                    return None
                inputs = list(plan.inputs)
                inputs[i] = child
                return plan.with_inputs(tuple(inputs))
    return None
