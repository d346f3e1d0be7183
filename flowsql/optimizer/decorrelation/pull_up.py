"""Lift correlated predicates out of a subquery plan.

Given a subquery plan ``S`` and the ids of its outer references, ``pull_up`` returns
``(S', preds)`` where ``S'`` reads no outer column and ``preds`` are the conjuncts that did,
such that for every outer row ``r``::

    S evaluated for r  ==  sigma[preds(r)](S')  restricted to S's columns

This is the classic "magic" behind turning ``EXISTS``/``IN``/scalar subqueries into joins:
the predicates become the join condition. ``S'`` outputs S's columns plus every inner column
the predicates read, so the join can evaluate them.

The identity holds only through operators that commute with a filter on the lifted columns:

* Filter, Project (extended to pass the needed columns through), Sort, inner/cross joins
  (either side), and the preserved side of outer / semi / anti / mark / single joins.
* Aggregate only with equality predicates ``inner_expr = outer_expr``: grouping additionally
  by ``inner_expr`` makes each group belong to exactly the outer rows whose ``outer_expr``
  equals it. An aggregate *without* GROUP BY changes meaning under this rewrite (it yields
  one row even over no input); it is accepted only when the caller repairs that case
  (``allow_ungrouped=True``, used by scalar subqueries, which fix the empty-group value
  with a CASE over a presence test -- the COUNT bug).

Everything else (LIMIT, window functions, set operations, correlation in a select list or
inside an aggregate, in the null-supplying side of an outer join) raises PlanError naming
the construct: it cannot be decorrelated by predicate lifting (``domain_join`` then
decorrelates it another way).
"""

from __future__ import annotations

from flowsql.errors import PlanError
from flowsql.optimizer.columns import expr_key, exprs_cids, fields_by_cid
from flowsql.planner.expressions import (
    Call,
    ColumnRef,
    Expr,
    column_ids,
    conjoin,
    conjuncts,
    render,
)
from flowsql.planner.logical import (
    Aggregate,
    Filter,
    Join,
    LogicalPlan,
    Project,
    Scan,
    Sort,
    SubqueryAlias,
)
from flowsql.planner.schema import Field

Pulled = tuple[LogicalPlan, list[Expr]]


def pull_up(plan: LogicalPlan, outer: set[int], allow_ungrouped: bool = False,
            existential: bool = False) -> Pulled:
    """Lift the conjuncts reading ``outer`` columns to the top of ``plan`` (see module doc).

    ``existential``: the caller only asks whether matching rows exist (EXISTS, IN, mark),
    so row multiplicity does not matter and a semi join inside whose ON clause is
    correlated may become an inner join, whose ON conjuncts lift like any other.
    """
    return _Lifter(outer, allow_ungrouped, existential).lift(plan)


class _Lifter:
    def __init__(self, outer: set[int], allow_ungrouped: bool, existential: bool) -> None:
        self.outer = outer
        self.allow_ungrouped = allow_ungrouped
        self.existential = existential

    def correlated(self, e: Expr) -> bool:
        return bool(column_ids(e) & self.outer)

    def lift(self, plan: LogicalPlan) -> Pulled:
        if not any(self.correlated(e) for e in _all_exprs(plan)):
            return plan, []
        if isinstance(plan, Filter):
            return self._filter(plan)
        if isinstance(plan, Project):
            return self._project(plan)
        if isinstance(plan, Aggregate):
            return self._aggregate(plan)
        if isinstance(plan, Join):
            return self._join(plan)
        if isinstance(plan, Sort | SubqueryAlias):
            self._reject_own(plan, "ORDER BY")
            child, preds = self.lift(plan.inputs[0])
            return plan.with_inputs((child,)), preds
        if isinstance(plan, Scan):
            keep = [f for f in plan.filters if not self.correlated(f)]
            pulled = [f for f in plan.filters if self.correlated(f)]
            return plan.with_expressions(tuple(keep)), pulled
        raise PlanError(f"decorrelate_subqueries: a correlated reference below "
                        f"{_describe(plan)} in a subquery cannot be decorrelated")

    def _reject_own(self, plan: LogicalPlan, what: str) -> None:
        for e in plan.expressions():
            if self.correlated(e):
                raise PlanError(f"decorrelate_subqueries: correlated reference in {what} of a "
                                f"subquery ('{render(e)}') is not supported")

    def _filter(self, plan: Filter) -> Pulled:
        child, preds = self.lift(plan.input)
        keep: list[Expr] = []
        pulled: list[Expr] = []
        for c in conjuncts(plan.predicate):
            (pulled if self.correlated(c) else keep).append(c)
        predicate = conjoin(keep)
        node = child if predicate is None else Filter(child, predicate)
        return node, preds + pulled

    def _project(self, plan: Project) -> Pulled:
        self._reject_own(plan, "the select list")
        child, preds = self.lift(plan.input)
        return _pass_through(plan.with_inputs((child,)), child, preds, self.outer), preds

    def _join(self, plan: Join) -> Pulled:
        kind = plan.kind
        if (kind == "semi" and self.existential and not plan.null_aware
                and any(self.correlated(e) for e in plan.expressions())):
            # exists l: (exists r: p(l, r)) is exists (l, r): p(l, r)
            kind = "inner"
        if kind in ("inner", "cross"):
            left, lpreds = self.lift(plan.left)
            right, rpreds = self.lift(plan.right)
            keep = [c for c in conjuncts(plan.condition) if not self.correlated(c)]
            pulled = [c for c in conjuncts(plan.condition) if self.correlated(c)]
            condition = conjoin(keep)
            node = Join(left, right, "cross" if condition is None else "inner", condition)
            return node, lpreds + rpreds + pulled
        # Only the preserved side of other joins commutes with a filter.
        preserved = 1 if kind == "right" else 0
        if kind == "full" or any(self.correlated(e) for e in _all_exprs(plan.inputs[1 - preserved])):
            raise PlanError(f"decorrelate_subqueries: a correlated reference in the "
                            f"{'null-supplying' if kind != 'full' else 'FULL'} side of a "
                            f"{kind} join in a subquery cannot be decorrelated")
        self._reject_own(plan, f"the ON clause of a {kind} join")
        side, preds = self.lift(plan.inputs[preserved])
        inputs = (side, plan.right) if preserved == 0 else (plan.left, side)
        return plan.with_inputs(inputs), preds

    def _aggregate(self, plan: Aggregate) -> Pulled:
        self._reject_own(plan, "an aggregate or GROUP BY")
        if not plan.group_exprs and not self.allow_ungrouped:
            raise PlanError("decorrelate_subqueries: a correlated aggregate without GROUP BY "
                            "is only supported in a scalar subquery")
        child, preds = self.lift(plan.input)
        groups = list(plan.group_exprs)
        fields = list(plan.group_fields)
        known = {expr_key(g): f for g, f in zip(groups, fields)}
        lifted: list[Expr] = []
        for p in preds:
            inner, outer_side = self._equality_sides(p)
            key = expr_key(inner)
            if key not in known:
                field = (Field(inner.cid, inner.name, inner.dtype,
                               fields_by_cid(child.schema)[inner.cid].nullable)
                         if isinstance(inner, ColumnRef) else
                         Field.fresh(render(inner), inner.dtype))
                known[key] = field
                groups.append(inner)
                fields.append(field)
            lifted.append(Call("eq", (known[key].ref(), outer_side), p.dtype))
        node = Aggregate(child, tuple(groups), tuple(fields), plan.aggs, plan.agg_fields)
        return node, lifted

    def _equality_sides(self, p: Expr) -> tuple[Expr, Expr]:
        """``(inner, outer)`` of a predicate ``inner = outer`` lifted through an aggregate."""
        if isinstance(p, Call) and p.name == "eq":
            a, b = p.args
            for inner, outer_side in ((a, b), (b, a)):
                inner_ids = column_ids(inner)
                if inner_ids and not inner_ids & self.outer and column_ids(outer_side) <= self.outer:
                    return inner, outer_side
        raise PlanError(f"decorrelate_subqueries: correlated predicate '{render(p)}' below an "
                        f"aggregate must be an equality between an inner and an outer "
                        f"expression")


def _pass_through(node: LogicalPlan, child: LogicalPlan, preds: list[Expr],
                  outer: set[int]) -> LogicalPlan:
    """Extend a Project so it also outputs the inner columns ``preds`` read."""
    assert isinstance(node, Project)
    have = node.column_ids
    needed = [cid for cid in sorted(exprs_cids(preds) - outer) if cid not in have]
    if not needed:
        return node
    available = fields_by_cid(child.schema)
    extra = tuple(available[cid] for cid in needed)
    return Project(node.input, (*node.exprs, *(f.ref() for f in extra)),
                   (*node.fields, *extra))


def _all_exprs(plan: LogicalPlan) -> list[Expr]:
    """Every expression of every node of ``plan``."""
    out = list(plan.expressions())
    for child in plan.inputs:
        out.extend(_all_exprs(child))
    return out


def _describe(plan: LogicalPlan) -> str:
    names = {"Limit": "LIMIT", "Window": "a window function", "SetOp": "a set operation",
             "Values": "VALUES"}
    return names.get(type(plan).__name__, type(plan).__name__)
