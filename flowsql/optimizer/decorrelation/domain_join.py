"""Decorrelate any subquery by evaluating it once per distinct outer value (the domain).

Predicate pull-up (``pull_up``) fails where lifting a correlated predicate changes what an
operator computes: a non-equality below an aggregate, a LIMIT, a select list or aggregate
argument reading an outer column, a correlated null-supplying join side. For those this
module applies the unnesting of Neumann & Kemper ("Unnesting Arbitrary Queries", BTW 2015),
as DuckDB's dependent-join flattening does:

* ``D`` = DISTINCT of the outer columns the subquery reads (an Aggregate without
  aggregates over the outer input);
* the subquery ``S`` is rewritten into ``S_D``, a plan over ``D`` that outputs ``S``'s
  columns plus ``D``'s, such that for every outer row ``r``::

      S evaluated for r  ==  the rows of S_D whose D columns are NOT DISTINCT FROM r's

* the caller joins the outer input to ``S_D`` on that NULL-safe equality (semi, anti,
  mark, single or left join, exactly as after a pull-up).

``S_D`` is built by pushing ``D`` down ``S`` (the dependent join), node by node, until the
subtree no longer reads outer columns (a cross join with ``D``) or pull-up can lift its
correlated predicates (an inner join with ``D`` on them):

* Filter, Project, Sort, Window: read ``D``'s columns instead of the outer ones, pass them
  through; windows also partition by them.
* Aggregate: group by ``D``'s columns too. Without GROUP BY the aggregate must still yield
  one row for a domain value whose input is empty (COUNT 0, other aggregates NULL: the
  COUNT bug), so its result is left-joined to ``D`` and counts are coalesced to 0.
* LIMIT / OFFSET (over an optional ORDER BY): a ``row_number()`` per domain value.
* Joins and set operations where both inputs read outer columns: each input gets its own
  copy of ``D`` and the copies must match NULL-safely, which keeps every join kind exact
  (the extra conjunct is never NULL). FULL joins and null-aware joins with a correlated
  side are rejected.

Only the outer columns the outer input itself produces form ``D``; references to columns
of queries further out stay as they are, and the enclosing query's decorrelation removes
them (its pull-up or domain rewrite then also sees the joins made here).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from flowsql.errors import PlanError
from flowsql.optimizer.columns import outer_cids, project_onto
from flowsql.optimizer.decorrelation.null_safe import null_safe_equal
from flowsql.optimizer.decorrelation.pull_up import pull_up
from flowsql.optimizer.nullability import column_nullability
from flowsql.planner import types as T
from flowsql.planner.expressions import (
    AggCall,
    Call,
    ColumnRef,
    Expr,
    Literal,
    SortKey,
    WindowCall,
    column_ids,
    conjoin,
    conjuncts,
    replace_columns,
)
from flowsql.planner.logical import (
    Aggregate,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    SetOp,
    Sort,
    SubqueryAlias,
    Window,
    walk_plan,
)
from flowsql.planner.schema import Field, Schema

Decorrelated = tuple[LogicalPlan, list[Expr]]


def domain_join(subquery: LogicalPlan, outer: LogicalPlan) -> Decorrelated:
    """``(S_D, preds)``: ``S_D`` reads none of ``outer``'s columns and outputs
    ``subquery``'s columns plus the domain's; ``preds`` join an ``outer`` row to the rows of
    its own domain value (see module doc). ``(subquery, [])`` when the subquery reads no
    column of ``outer`` (it is correlated only to queries further out)."""
    refs = outer_cids(subquery)
    columns = tuple(f for f in outer.schema if f.cid in refs)
    if not columns:
        return subquery, []
    nullable = column_nullability(outer)
    flags = tuple(nullable(f.cid) for f in columns)
    domain = _Domain.over(outer, columns, flags)
    pushed = _Pusher({f.cid for f in columns}).push(subquery, domain)
    plan = project_onto(pushed, (*subquery.schema, *domain.fields))
    preds = [p for c, d, n in zip(columns, domain.fields, flags)
             for p in null_safe_equal(c.ref(), d.ref(), n)]
    return plan, preds


@dataclass(frozen=True)
class _Domain:
    """One copy of ``D``: its plan, its columns, and which outer column each replaces."""

    source: LogicalPlan
    columns: tuple[Field, ...]
    nullable: tuple[bool, ...]
    plan: LogicalPlan
    fields: Schema

    @staticmethod
    def over(source: LogicalPlan, columns: tuple[Field, ...],
             nullable: tuple[bool, ...]) -> _Domain:
        fields = tuple(Field.fresh(c.name, c.dtype, n) for c, n in zip(columns, nullable))
        plan = Aggregate(source, tuple(c.ref() for c in columns), fields, (), ())
        return _Domain(source, columns, nullable, plan, fields)

    def copy(self) -> _Domain:
        """Another ``D`` with fresh column ids, for a second input that needs one."""
        return _Domain.over(self.source, self.columns, self.nullable)

    @property
    def refs(self) -> tuple[Expr, ...]:
        return tuple(f.ref() for f in self.fields)

    def bind(self, e: Expr) -> Expr:
        """``e`` reading this domain's columns instead of the outer ones."""
        return replace_columns(e, {c.cid: f.ref() for c, f in zip(self.columns, self.fields)})

    def link(self, other: _Domain) -> list[Expr]:
        """Conjuncts matching rows of this copy and ``other`` of the same domain value."""
        return [p for a, b, n in zip(self.fields, other.fields, self.nullable)
                for p in null_safe_equal(a.ref(), b.ref(), n)]


class _Pusher:
    """Pushes a domain down a subquery plan (the dependent join); every ``push`` returns a
    plan whose columns include the node's and the domain's."""

    def __init__(self, outer: set[int]) -> None:
        self.outer = outer

    def correlated(self, plan: LogicalPlan) -> bool:
        return any(column_ids(e) & self.outer
                   for node in walk_plan(plan) for e in node.expressions())

    def push(self, plan: LogicalPlan, dom: _Domain) -> LogicalPlan:
        if not self.correlated(plan):
            return Join(dom.plan, plan, "cross")
        try:
            lifted, preds = pull_up(plan, self.outer)
        except PlanError:
            return self._structural(plan, dom)
        condition = conjoin([dom.bind(p) for p in preds])
        return Join(dom.plan, lifted, "cross" if condition is None else "inner", condition)

    def _structural(self, plan: LogicalPlan, dom: _Domain) -> LogicalPlan:
        if isinstance(plan, Filter | Sort):
            child = self.push(plan.inputs[0], dom)
            return plan.with_inputs((child,)).with_expressions(
                tuple(dom.bind(e) for e in plan.expressions()))
        if isinstance(plan, Project):
            child = self.push(plan.input, dom)
            return Project(child, (*(dom.bind(e) for e in plan.exprs), *dom.refs),
                           (*plan.fields, *dom.fields))
        if isinstance(plan, SubqueryAlias):
            return self.push(plan.input, dom)
        if isinstance(plan, Aggregate):
            return self._aggregate(plan, dom)
        if isinstance(plan, Limit):
            return self._limit(plan, dom)
        if isinstance(plan, Window):
            return self._window(plan, dom)
        if isinstance(plan, Join):
            return self._join(plan, dom)
        if isinstance(plan, SetOp):
            return self._set_op(plan, dom)
        raise PlanError(f"decorrelate_subqueries: a correlated reference in "
                        f"{type(plan).__name__} of a subquery cannot be decorrelated")

    def _aggregate(self, plan: Aggregate, dom: _Domain) -> LogicalPlan:
        if plan.group_exprs:
            child = self.push(plan.input, dom)
            groups = (*dom.refs, *(dom.bind(g) for g in plan.group_exprs))
            return Aggregate(child, groups, (*dom.fields, *plan.group_fields),
                             _bind_aggs(dom, plan), plan.agg_fields)
        # One row per domain value even where the input has none: group a copy of the
        # domain, left-join it to this one, and give empty groups the value over no rows.
        inner = dom.copy()
        child = self.push(plan.input, inner)
        values = tuple(Field.fresh(f.name, f.dtype) for f in plan.agg_fields)
        grouped = Aggregate(child, inner.refs, inner.fields, _bind_aggs(inner, plan), values)
        joined = Join(dom.plan, grouped, "left", conjoin(dom.link(inner)))
        exprs = (*dom.refs, *(_over_no_rows(a, v) for a, v in zip(plan.aggs, values)))
        return Project(joined, exprs, (*dom.fields, *plan.agg_fields))

    def _limit(self, plan: Limit, dom: _Domain) -> LogicalPlan:
        source = plan.input
        if isinstance(source, Project):  # LIMIT commutes with a select list
            moved = Limit(source.input, plan.limit, plan.offset)
            return self.push(source.with_inputs((moved,)), dom)
        keys: tuple[SortKey, ...] = ()
        if isinstance(source, Sort):
            keys = tuple(replace(k, expr=dom.bind(k.expr)) for k in source.keys)
            source = source.input
        child = self.push(source, dom)
        number = Field.fresh("row_number", T.INT64, nullable=False)
        call = WindowCall("row_number", (), dom.refs, keys, None, T.INT64)
        numbered: LogicalPlan = Window(child, (call,), (number,))
        bounds: list[Expr] = []
        if plan.offset:
            bounds.append(Call("gt", (number.ref(), Literal(plan.offset, T.INT64)), T.BOOL))
        if plan.limit is not None:
            last = Literal(plan.offset + plan.limit, T.INT64)
            bounds.append(Call("lte", (number.ref(), last), T.BOOL))
        predicate = conjoin(bounds)
        if predicate is not None:
            numbered = Filter(numbered, predicate)
        return project_onto(numbered, child.schema)

    def _window(self, plan: Window, dom: _Domain) -> LogicalPlan:
        child = self.push(plan.input, dom)
        calls = []
        for c in plan.calls:
            bound = dom.bind(c)
            assert isinstance(bound, WindowCall)
            calls.append(replace(bound, partition_by=(*dom.refs, *bound.partition_by)))
        return Window(child, tuple(calls), plan.fields)

    def _join(self, plan: Join, dom: _Domain) -> LogicalPlan:
        left_dep, right_dep = self.correlated(plan.left), self.correlated(plan.right)
        condition = dom.bind(plan.condition) if plan.condition is not None else None
        kind = plan.kind
        if kind in ("inner", "cross") and not (left_dep and right_dep):
            if right_dep:
                return Join(plan.left, self.push(plan.right, dom), kind, condition)
            return Join(self.push(plan.left, dom), plan.right, kind, condition)
        if kind == "right" and not left_dep:
            return Join(plan.left, self.push(plan.right, dom), kind, condition)
        if kind in ("left", "single", "semi", "anti", "mark") and not right_dep:
            return replace(plan, left=self.push(plan.left, dom), condition=condition)
        if kind == "full" or plan.null_aware:
            what = "FULL join" if kind == "full" else "NOT IN / IN join"
            raise PlanError(f"decorrelate_subqueries: a correlated reference in a {what} "
                            f"inside a subquery cannot be decorrelated")
        # Both inputs depend on the outer row: each gets its own copy of the domain, and
        # rows only meet rows of the same domain value. The preserved side keeps ``dom``.
        other = dom.copy()
        left_dom, right_dom = (other, dom) if kind == "right" else (dom, other)
        left = self.push(plan.left, left_dom)
        right = self.push(plan.right, right_dom)
        matched = conjoin([*conjuncts(condition), *dom.link(other)])
        return replace(plan, left=left, right=right,
                       kind="inner" if kind == "cross" else kind, condition=matched)

    def _set_op(self, plan: SetOp, dom: _Domain) -> LogicalPlan:
        # Set operations match rows by value, NULLs included: the domain columns simply
        # become part of every row.
        inputs = []
        for side in (plan.left, plan.right):
            copy = dom.copy()
            inputs.append(project_onto(self.push(side, copy), (*side.schema, *copy.fields)))
        return SetOp(inputs[0], inputs[1], plan.kind, plan.all, (*plan.fields, *dom.fields))


def _bind_aggs(dom: _Domain, plan: Aggregate) -> tuple[AggCall, ...]:
    bound = tuple(dom.bind(a) for a in plan.aggs)
    assert all(isinstance(a, AggCall) for a in bound)
    return bound  # type: ignore[return-value]


def _over_no_rows(agg: AggCall, value: Field) -> Expr:
    """The aggregate's value after a left join: NULL for a domain value without input
    rows, which is right for every aggregate except COUNT (0)."""
    ref: ColumnRef = value.ref()
    if agg.name in ("count", "count_star"):
        return Call("coalesce", (ref, Literal(0, value.dtype)), value.dtype)
    return ref
