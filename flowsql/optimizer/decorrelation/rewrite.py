"""Replace the subquery expressions of one Filter or Project by joins.

Which join, and why it is exact under SQL's three-valued logic:

* A WHERE/HAVING conjunct ``EXISTS (S)`` keeps a row iff some ``S`` row satisfies the
  lifted predicates: a **semi** join. ``NOT EXISTS (S)``: an **anti** join.
* A conjunct ``x IN (S)`` keeps a row only when the IN is TRUE (NULL and FALSE both drop
  it), i.e. when some row has ``x = col`` TRUE: a semi join on ``x = col``.
* A conjunct ``x NOT IN (S)`` keeps a row only when no row of ``S`` makes ``x = col`` TRUE
  *or NULL*. With non-nullable ``x`` and ``col`` that is a plain anti join; uncorrelated,
  a **null-aware** anti join (the runtime implements NOT IN semantics); correlated, an anti
  join whose condition spells the NULL cases out:
  ``preds AND (x = col OR x IS NULL OR col IS NULL)``.
* Anywhere else (under OR, NOT of a non-conjunct, CASE, the select list) the subquery
  becomes a column: ``EXISTS`` a **mark** join's mark (never NULL); ``x IN (S)`` a
  null-aware mark (TRUE / NULL / FALSE as IN), or -- correlated and nullable -- two marks,
  one for a TRUE match and one for a NULL comparison, combined by CASE.
* A scalar subquery becomes the value column of a **single** join (a left join that fails
  on a second match, as a scalar subquery must). When the subquery is an aggregate without
  GROUP BY under correlation, pull-up groups it by the correlation columns, each outer row
  meets at most one group, and a **left** join suffices; an outer row without a group must
  still see the aggregate over no rows (COUNT = 0, not NULL: the COUNT bug), so the value is
  ``CASE WHEN <key of the group> IS NULL THEN <value over no rows> ELSE value END``.

Where pull-up cannot lift the correlated predicates (a non-equality below an aggregate, a
LIMIT, an outer column in a select list or aggregate argument, ...), the subquery is instead
evaluated once per distinct outer value (``domain_join``) and joined back on those values
with the same join kinds; a scalar aggregate without GROUP BY then already has exactly one
row per outer value, COUNT bug included, so a left join suffices. Where both apply and a
``MethodChoice`` is given, both joins are built and the cheaper kept (``choice``).

The joins stack on the node's input; a Project on top restores the node's schema. A
Filter's conjuncts without subqueries go below the joins, so the domain of a subquery is
taken over the rows the WHERE clause keeps (the outer keys reduce the domain first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flowsql.errors import PlanError
from flowsql.optimizer.columns import outer_cids, project_onto
from flowsql.optimizer.decorrelation.choice import DOMAIN, PULL_UP, MethodChoice
from flowsql.optimizer.decorrelation.domain_join import domain_join
from flowsql.optimizer.decorrelation.pull_up import Pulled, pull_up
from flowsql.optimizer.folding import fold
from flowsql.optimizer.nullability import column_nullability, may_be_null
from flowsql.planner import types as T
from flowsql.planner.expressions import (
    AggCall,
    Call,
    Case,
    Cast,
    Exists,
    Expr,
    InSubquery,
    Literal,
    ScalarSubquery,
    column_ids,
    conjoin,
    conjuncts,
    contains_subquery,
    replace_columns,
    transform,
)
from flowsql.planner.logical import (
    Aggregate,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    Sort,
)
from flowsql.planner.schema import Field

TRUE = Literal(True, T.BOOL)
FALSE = Literal(False, T.BOOL)

R = TypeVar("R")
#: how to decorrelate one subquery: PULL_UP (PlanError where it cannot), DOMAIN, or None
#: for pull-up where it applies and the domain rewrite elsewhere
Method = str | None


def rewrite_filter(node: Filter, choice: MethodChoice | None = None) -> LogicalPlan:
    """The Filter with every subquery replaced by a join below it."""
    plain = [c for c in conjuncts(node.predicate) if not contains_subquery(c)]
    base = node.input if not plain else Filter(node.input, conjoin(plain))  # type: ignore[arg-type]
    builder = _JoinStack(base, choice)
    kept: list[Expr] = []
    for c in conjuncts(node.predicate):
        if not contains_subquery(c):
            continue
        remaining = builder.conjunct(c)
        if remaining is not None:
            kept.append(remaining)
    predicate = conjoin(kept)
    plan = builder.plan if predicate is None else Filter(builder.plan, predicate)
    return project_onto(plan, node.schema)


def rewrite_project(node: Project, choice: MethodChoice | None = None) -> LogicalPlan:
    """The Project with every subquery replaced by a join below it."""
    builder = _JoinStack(node.input, choice)
    exprs = tuple(builder.expression(e) if contains_subquery(e) else e for e in node.exprs)
    return Project(builder.plan, exprs, node.fields)


class _JoinStack:
    """Joins accumulated on top of a node's input, one per subquery."""

    def __init__(self, plan: LogicalPlan, choice: MethodChoice | None = None) -> None:
        self.base = plan  # the node's input: what the subqueries' outer references read
        self.plan = plan
        self.choice = choice

    def costed(self, subquery: LogicalPlan, build: Callable[[Method], R]) -> R:
        """``build(method)`` joins ``subquery`` to the stack and returns what its caller
        needs. Where both methods apply and there is a ``MethodChoice``, it runs once per
        method and the cheaper plan stays; else once, by pull-up where it applies."""
        if self.choice is None or not outer_cids(subquery) & self.base.column_ids:
            return build(None)
        start = self.plan
        try:
            pulled = build(PULL_UP)
        except PlanError:
            self.plan = start
            return build(DOMAIN)
        pulled_plan, self.plan = self.plan, start
        domain = build(DOMAIN)
        if self.choice.choose(subquery, pulled_plan, self.plan) == DOMAIN:
            return domain
        self.plan = pulled_plan
        return pulled

    def lift(self, subquery: LogicalPlan, method: Method,
             existential: bool = False) -> Pulled:
        """The subquery without correlation and the predicates joining it to the outer
        rows, by ``method`` (see ``Method``)."""
        pulled = _pull_up_by(method, subquery, existential=existential)
        return pulled if pulled is not None else domain_join(subquery, self.base)

    def join(self, right: LogicalPlan, kind: str, condition: Expr | None,
             mark: Field | None = None, null_aware: bool = False) -> None:
        self.plan = Join(self.plan, right, kind, condition, mark, null_aware)

    # -- conjuncts: semi / anti joins --------------------------------------------------
    def conjunct(self, c: Expr) -> Expr | None:
        """Absorb a WHERE conjunct as a semi/anti join (None), or rewrite it as an
        expression over new join columns."""
        negated = isinstance(c, Call) and c.name == "not"
        inner = c.args[0] if negated else c  # type: ignore[attr-defined]
        if isinstance(inner, Exists) and not _always_one_row(_exists_body(inner.plan)):
            kind = "anti" if negated else "semi"
            self.costed(inner.plan, lambda m: self._exists_join(inner, kind, m))
            return None
        if isinstance(inner, InSubquery):
            arg = self.expression(inner.arg) if contains_subquery(inner.arg) else inner.arg
            self.costed(inner.plan, lambda m: self._in_conjunct(arg, inner.plan, negated, m))
            return None
        return self.expression(c)

    def _exists_join(self, e: Exists, kind: str, method: Method,
                     mark: Field | None = None) -> None:
        right, preds = self.lift(_exists_body(e.plan), method, existential=True)
        if not preds and not outer_cids(right):
            right = Limit(right, 1)  # only non-emptiness matters
        self.join(right, kind, conjoin(preds), mark)

    def _in_conjunct(self, arg: Expr, subquery: LogicalPlan, negated: bool,
                     method: Method) -> None:
        col = subquery.schema[0]
        right, preds = self.lift(subquery, method, existential=True)
        eq = Call("eq", (arg, col.ref()), T.BOOL)
        if not negated:
            self.join(right, "semi", conjoin([eq, *preds]))
        elif not self._nullable(arg, subquery):
            self.join(right, "anti", conjoin([eq, *preds]))
        elif not preds:
            self.join(right, "anti", eq, null_aware=True)
        else:
            self.join(right, "anti", conjoin([*preds, _eq_or_null(eq, arg, col)]))

    def _nullable(self, arg: Expr, subquery: LogicalPlan) -> bool:
        """Whether ``arg = <subquery column>`` may be NULL."""
        col = subquery.schema[0]
        return (may_be_null(arg, column_nullability(self.plan))
                or column_nullability(subquery)(col.cid))

    # -- expressions: mark / single / left joins ---------------------------------------
    def expression(self, e: Expr) -> Expr:
        """``e`` with every subquery replaced by a column of a join added to the stack."""
        return transform(e, self._replace)

    def _replace(self, e: Expr) -> Expr | None:
        if isinstance(e, Exists):
            return self._exists_mark(e)
        if isinstance(e, InSubquery):
            return self.costed(e.plan, lambda m: self._in_mark(e.arg, e.plan, m))
        if isinstance(e, ScalarSubquery):
            return self.costed(e.plan, lambda m: self._scalar(e, m))
        return None

    def _exists_mark(self, e: Exists) -> Expr:
        if _always_one_row(_exists_body(e.plan)):
            return TRUE
        mark = Field.fresh("exists", T.BOOL, nullable=False)
        self.costed(e.plan, lambda m: self._exists_join(e, "mark", m, mark))
        return mark.ref()

    def _in_mark(self, arg: Expr, subquery: LogicalPlan, method: Method) -> Expr:
        col = subquery.schema[0]
        right, preds = self.lift(subquery, method, existential=True)
        eq = Call("eq", (arg, col.ref()), T.BOOL)
        nullable = self._nullable(arg, subquery)
        if not nullable or not preds:
            mark = Field.fresh("in", T.BOOL, nullable=nullable)
            self.join(right, "mark", conjoin([eq, *preds]), mark, null_aware=nullable)
            return mark.ref()
        # Correlated and nullable: TRUE if some row matches, else NULL if some row compares
        # with NULL, else FALSE -- two plain marks over the same right input.
        found = Field.fresh("in", T.BOOL, nullable=False)
        unknown = Field.fresh("in_null", T.BOOL, nullable=False)
        self.join(right, "mark", conjoin([eq, *preds]), found)
        nulls = Call("or", (Call("is_null", (arg,), T.BOOL),
                            Call("is_null", (col.ref(),), T.BOOL)), T.BOOL)
        self.join(right, "mark", conjoin([*preds, nulls]), unknown)
        return Case((found.ref(), unknown.ref()), (TRUE, Literal(None, T.BOOL)), FALSE, T.BOOL)

    def _scalar(self, e: ScalarSubquery, method: Method) -> Expr:
        value = e.plan.schema[0]
        empty = _value_over_no_rows(e.plan, value)
        pulled = _pull_up_by(method, e.plan, allow_ungrouped=empty is not None)
        if pulled is None:
            right, preds = domain_join(e.plan, self.base)
            one_row = preds and _always_one_row(_below_projects(e.plan))
            self.join(right, "left" if one_row else "single", conjoin(preds))
            return value.ref()
        right, preds = pulled
        if not preds or empty is None:
            self.join(right, "single", conjoin(preds))
            return value.ref()
        # Pull-up grouped the aggregate by the correlation keys: at most one row per outer
        # row, so a left join; preds[0] is "group key = outer expr" (see pull_up).
        self.join(right, "left", conjoin(preds))
        if isinstance(empty, Literal) and empty.value is None:
            return value.ref()
        key = preds[0].args[0]  # type: ignore[attr-defined]
        return Case((Call("is_null", (key,), T.BOOL),), (empty,), value.ref(), value.dtype)


def _pull_up_by(method: Method, subquery: LogicalPlan, allow_ungrouped: bool = False,
                existential: bool = False) -> Pulled | None:
    """The pull-up of ``subquery`` unless ``method`` asks for the domain rewrite; None when
    it does, or when pull-up cannot decorrelate the subquery and ``method`` allows the
    domain rewrite (under ``PULL_UP`` that PlanError propagates)."""
    if method == DOMAIN:
        return None
    try:
        return pull_up(subquery, outer_cids(subquery), allow_ungrouped=allow_ungrouped,
                       existential=existential)
    except PlanError:
        if method == PULL_UP:
            raise
        return None


def _eq_or_null(eq: Expr, arg: Expr, col: Field) -> Expr:
    return Call("or", (eq, Call("is_null", (arg,), T.BOOL),
                       Call("is_null", (col.ref(),), T.BOOL)), T.BOOL)


def _exists_body(plan: LogicalPlan) -> LogicalPlan:
    """The part of an EXISTS subquery that decides whether it has rows: the select list,
    ORDER BY and a LIMIT of at least one row without OFFSET do not matter."""
    while isinstance(plan, Project | Sort) or (
            isinstance(plan, Limit) and plan.offset == 0
            and (plan.limit is None or plan.limit >= 1)):
        plan = plan.inputs[0]
    return plan


def _below_projects(plan: LogicalPlan) -> LogicalPlan:
    while isinstance(plan, Project):
        plan = plan.input
    return plan


def _always_one_row(plan: LogicalPlan) -> bool:
    """An aggregate without GROUP BY has exactly one row, whatever its input."""
    return isinstance(plan, Aggregate) and not plan.group_exprs


def _value_over_no_rows(plan: LogicalPlan, value: Field) -> Expr | None:
    """For a scalar subquery that is Projects over an aggregate without GROUP BY: the value
    it yields when the aggregate's input is empty (COUNT 0, other aggregates NULL), folded.
    None for any other shape."""
    expr: Expr = value.ref()
    while isinstance(plan, Project):
        expr = replace_columns(expr, {f.cid: x for f, x in zip(plan.fields, plan.exprs)})
        plan = plan.input
    if not _always_one_row(plan):
        return None
    assert isinstance(plan, Aggregate)
    empties: dict[int, Expr] = {f.cid: _aggregate_over_no_rows(a, f)
                                for a, f in zip(plan.aggs, plan.agg_fields)}
    expr = fold(replace_columns(expr, empties))
    if column_ids(expr):
        return None
    if not expr.dtype.equals(value.dtype):
        expr = fold(Cast(expr, value.dtype))
    return expr


def _aggregate_over_no_rows(agg: AggCall, field: Field) -> Expr:
    return Literal(0 if agg.name in ("count", "count_star") else None, field.dtype)
