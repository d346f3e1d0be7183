"""Add the predicates the equivalence classes of an inner-join block imply.

Over a maximal block of inner and cross joins (outer, semi and anti joins are its leaves,
like any other non-inner node), the column equalities of the join conditions and the ones
each leaf applies at its top (scan filters, a Filter) form equivalence classes
(:mod:`flowsql.optimizer.equivalence`). From each class the rule adds:

* ``col = constant`` for every column of a class that equals a constant, when the column's
  leaf does not apply it yet: ``o_orderkey = 5 AND l_orderkey = o_orderkey`` then also filters
  the lineitem scan;
* one equality between two relations that hold columns of the class but are not joined by
  an equality of it: these are the edges join ordering needs (``ps_partkey = p_partkey`` from
  ``p_partkey = l_partkey AND ps_partkey = l_partkey``);
* an equality between two columns of one leaf that the class equates but the leaf does not.

The new conjuncts go on top of the block and pushdown takes them to where they apply (each
constant into its scan). Where reorder_joins then rebuilds the block, every join carries
only a spanning set of each class's equalities (see :mod:`flowsql.optimizer.join_graph`), so
the estimator never sees ``a = b``, ``b = c`` and ``a = c`` at one join; a block it leaves
alone (two relations) gets no new edge, since two relations sharing a class are already
joined by one of its equalities. The new constant filters are not redundant for the
estimator: they are what reduces the scans.

In ``execution.runtime-mode`` = ``streaming`` only the constants are added: join ordering
there keeps to the query's own edges (see reorder_joins).

Nothing crosses a null-supplying side: outer joins are leaves and only their output columns
take part, and a conjunct added above such a leaf stays above it (pushdown moves conjuncts
from above an outer join only into its preserved side).
"""

from __future__ import annotations

from collections.abc import Iterator

from flowsql.optimizer.columns import expr_key
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.equivalence import EquivalenceClasses, column_equality, equality
from flowsql.optimizer.join_graph import flatten_inner_joins, is_inner_join, leaf_conjuncts
from flowsql.optimizer.plan_window_aggregate import runtime_mode
from flowsql.optimizer.rules.push_down_filter import push_down_filter
from flowsql.planner.expressions import ColumnRef, Expr, column_ids, conjoin
from flowsql.planner.logical import Filter, LogicalPlan


def infer_equivalences(plan: LogicalPlan, context: OptimizerContext) -> LogicalPlan:
    edges = runtime_mode(context.settings) != "streaming"
    return _infer(plan, context, edges)


def _infer(plan: LogicalPlan, context: OptimizerContext, edges: bool) -> LogicalPlan:
    if not is_inner_join(plan):
        inputs = tuple(_infer(c, context, edges) for c in plan.inputs)
        if all(a is b for a, b in zip(inputs, plan.inputs)):
            return plan
        return plan.with_inputs(inputs)
    leaves: list[LogicalPlan] = []
    preds: list[Expr] = []
    flatten_inner_joins(plan, leaves, preds)
    new_leaves = [_infer(leaf, context, edges) for leaf in leaves]
    block = plan
    if any(a is not b for a, b in zip(new_leaves, leaves)):
        block = _replace_leaves(plan, iter(new_leaves))
    implied = implied_conjuncts(new_leaves, preds, edges)
    if not implied:
        return block
    return push_down_filter(Filter(block, conjoin(implied)), context)  # type: ignore[arg-type]


def _replace_leaves(plan: LogicalPlan, leaves: Iterator[LogicalPlan]) -> LogicalPlan:
    if is_inner_join(plan):
        return plan.with_inputs(tuple(_replace_leaves(c, leaves) for c in plan.inputs))
    return next(leaves)


def implied_conjuncts(leaves: list[LogicalPlan], preds: list[Expr],
                      edges: bool = True) -> list[Expr]:
    """The conjuncts the block's classes imply that neither ``preds`` nor the leaves state
    (with ``edges`` False only the constants)."""
    owner: dict[int, int] = {}
    for i, leaf in enumerate(leaves):
        for cid in leaf.column_ids:
            owner[cid] = i
    known = [*preds, *(c for leaf in leaves for c in leaf_conjuncts(leaf))]
    classes = EquivalenceClasses.from_conjuncts(known)
    stated = {expr_key(c) for c in known}
    local = [EquivalenceClasses.from_conjuncts(
        [*leaf_conjuncts(leaf), *(p for p in preds if column_ids(p) and column_ids(p) <= ids)])
        for leaf, ids in ((leaf, leaf.column_ids) for leaf in leaves)]
    joined: set[tuple[int, int, int]] = set()  # (class, relation, relation) with an equality
    for c in known:
        pair = column_equality(c)
        if pair is not None and pair[0].cid in owner and pair[1].cid in owner:
            a, b = owner[pair[0].cid], owner[pair[1].cid]
            root = classes.find(pair[0].cid)
            assert root is not None
            joined.add((root, min(a, b), max(a, b)))
    out: list[Expr] = []
    for members in classes.classes():
        owned = [m for m in members if m.cid in owner]
        if not owned:
            continue
        root = classes.find(owned[0].cid)
        assert root is not None
        constant = classes.constant(owned[0].cid)
        if constant is not None:
            out += [c for c in (equality(m, constant) for m in owned)
                    if not _stated(c, stated)]
        if edges:
            out += _missing_edges(root, owned, owner, joined, local)
    return out


def _missing_edges(root: int, owned: list[ColumnRef], owner: dict[int, int],
                   joined: set[tuple[int, int, int]],
                   local: list[EquivalenceClasses]) -> list[Expr]:
    """One equality per pair of relations holding the class but joined by none of its
    equalities, and the equalities of two columns of one relation it does not apply."""
    first: dict[int, ColumnRef] = {}
    for m in owned:
        first.setdefault(owner[m.cid], m)
    out: list[Expr] = []
    relations = sorted(first)
    for x, a in enumerate(relations):
        for b in relations[x + 1:]:
            if (root, a, b) not in joined:
                out.append(equality(first[a], first[b]))
    for m in owned:  # two columns of one relation the relation does not equate yet
        rep = first[owner[m.cid]]
        if m is not rep and not _equated(local[owner[m.cid]], rep, m):
            out.append(equality(rep, m))
            local[owner[m.cid]].add(out[-1])
    return out


def _equated(classes: EquivalenceClasses, a: ColumnRef, b: ColumnRef) -> bool:
    root = classes.find(a.cid)
    return root is not None and root == classes.find(b.cid)


def _stated(c: Expr, stated: set[str]) -> bool:
    a, b = c.args  # type: ignore[attr-defined]
    return expr_key(c) in stated or expr_key(equality(b, a)) in stated
