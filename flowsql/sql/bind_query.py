"""Binding queries (SELECT, set operations, VALUES, WITH) to logical plans.

A SELECT block binds in SQL's logical order: FROM (joins) -> WHERE -> GROUP BY / aggregates
-> HAVING -> window functions -> select list -> DISTINCT -> ORDER BY -> LIMIT. Aggregate and
window calls are bound in place by the expression binder and then lifted out into Aggregate
and Window nodes, leaving column references behind. Every produced column gets a fresh id.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import sqlglot
from sqlglot import exp

from flowsql.errors import BindError
from flowsql.planner import types as T
from flowsql.planner.catalog import Catalog, TableEntry, ViewEntry
from flowsql.planner.expressions import (
    SUBQUERY_TYPES,
    AggCall,
    Call,
    ColumnRef,
    Expr,
    Literal,
    SortKey,
    WindowCall,
    conjoin,
    contains_subquery,
    render,
    replace_columns,
    transform,
    walk,
)
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
    SubqueryAlias,
    Values,
    Window,
    transform_plan,
)
from flowsql.planner.nesting import deep_nesting, too_deep_message
from flowsql.planner.schema import Field
from flowsql.sql.bind_expressions import ExpressionBinder, contains_aggregate_ast, sort_key
from flowsql.sql.bind_special_functions import PROCTIME_TYPE
from flowsql.sql.bind_table_function import bind_table_function, table_function_call
from flowsql.sql.bind_temporal_join import (
    check_lookup_join,
    system_time_of,
    without_system_time,
)
from flowsql.sql.bind_window_tvf import bind_window_tvf, window_tvf_call
from flowsql.sql.dialect import DIALECT
from flowsql.sql.group_windows import rewrite_group_window
from flowsql.sql.grouping_sets import (
    Alternative,
    GroupingCall,
    Rebind,
    cross,
    cube,
    rollup,
    union_of_grouping_sets,
)
from flowsql.sql.named_windows import expand_named_windows
from flowsql.sql.positions import node_position
from flowsql.sql.scope import CteDef, Relation, Scope


@dataclass
class _Item:
    """One select-list entry before and after binding."""

    node: exp.Expression
    name: str
    explicit_alias: bool
    expr: Expr | None = None

    @property
    def bound(self) -> Expr:
        assert self.expr is not None, "select item used before binding"
        return self.expr


class QueryBinder:
    """Binds query ASTs against a catalog. ``sql`` is the statement text for positions;
    ``time_zone`` is the session's normalized ``table.local-time-zone``, bound into every
    conversion that depends on it (views and computed columns included)."""

    def __init__(self, catalog: Catalog, sql: str, view_parser=None,  # type: ignore[no-untyped-def]
                 time_zone: str = "UTC") -> None:
        self.catalog = catalog
        self.sql = sql
        self.time_zone = time_zone
        self.exprs = ExpressionBinder(sql, self._bind_subquery, time_zone, catalog.functions)
        self._view_parser = view_parser
        self._views_in_progress: list[str] = []

    def error(self, message: str, node: exp.Expression | None) -> BindError:
        line, col = node_position(node)
        return BindError(message, line, col, self.sql)

    # -- queries -------------------------------------------------------------------------
    def bind(self, node: exp.Expression) -> LogicalPlan:
        """Bind a top-level query (nested up to ``MAX_EXPRESSION_NESTING`` levels)."""
        line, col = node_position(node)
        with deep_nesting(lambda: BindError(too_deep_message("bind"), line, col, self.sql)):
            return self.bind_query(node, None, {})

    def _bind_subquery(self, node: exp.Expression, scope: Scope) -> LogicalPlan:
        return self.bind_query(node, scope, scope.ctes)

    def bind_query(self, node: exp.Expression, outer: Scope | None,
                   ctes: dict[str, CteDef]) -> LogicalPlan:
        ctes = self._register_ctes(node, ctes)
        if isinstance(node, exp.Select):
            return self._bind_select(node, outer, ctes)
        if isinstance(node, exp.Union | exp.Intersect | exp.Except):
            return self._bind_set_operation(node, outer, ctes)
        if isinstance(node, exp.Subquery):
            plan = self.bind_query(node.this, outer, ctes)
            return self._order_limit_by_output(node, plan, outer, ctes)
        if isinstance(node, exp.Values):
            return self._bind_values(node)
        if isinstance(node, exp.Paren):
            return self.bind_query(node.this, outer, ctes)
        raise self.error(f"unsupported query form '{node.sql()[:60]}'", node)

    def _register_ctes(self, node: exp.Expression, ctes: dict[str, CteDef]) -> dict[str, CteDef]:
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is None:
            return ctes
        if with_.args.get("recursive"):
            raise self.error("WITH RECURSIVE is not supported", with_)
        ctes = dict(ctes)
        for cte in with_.expressions:
            alias = cte.args.get("alias")
            columns = tuple(c.name for c in alias.columns) if alias is not None else ()
            ctes[cte.alias.lower()] = CteDef(cte.this, columns, dict(ctes))
        return ctes

    # -- SELECT --------------------------------------------------------------------------
    def _bind_select(self, select: exp.Select, outer: Scope | None,
                     ctes: dict[str, CteDef]) -> LogicalPlan:
        select = rewrite_group_window(expand_named_windows(select, self.error), self.error)
        scope = Scope(parent=outer, ctes=ctes)
        plan = self._bind_input(select, scope)

        def rebind() -> tuple[LogicalPlan, Callable[[Expr], Expr]]:
            """FROM and WHERE bound again, for another grouping set's aggregate."""
            again = Scope(parent=outer, ctes=ctes)
            replica = self._bind_input(select, again)
            mapping: dict[int, Expr] = {old.cid: new.ref() for old, new in
                                        zip(scope.local_fields(), again.local_fields())}
            return replica, lambda e: replace_columns(e, mapping)

        items = self._expand_items(select, scope)
        group = select.args.get("group")
        having = select.args.get("having")
        order = select.args.get("order")
        for item in items:
            item.expr = self.exprs.bind(item.node, scope)
        order_refs = self._resolve_order(order, items, scope)
        aggregating = group is not None or having is not None or any(
            contains_aggregate_ast(i.node) or (i.expr is not None and _has_agg(i.expr))
            for i in items) or any(
            isinstance(r, Expr) and _has_agg(r) for r in order_refs)

        having_expr = None
        if having is not None:
            having_expr = self.exprs.boolean(self.exprs.bind(having.this, scope), having.this)
        if aggregating:
            pending, lift = self._bind_aggregate(plan, group, items, scope, select, rebind)
            for item in items:
                item.expr = lift(item.bound, item.node)
            order_refs = [lift(r, order) if isinstance(r, Expr) else r for r in order_refs]
            lifted_having = lift(having_expr, having) if having_expr is not None else None
            plan = pending.build()  # after lifting: every aggregate is registered now
            if lifted_having is not None:
                plan = Filter(plan, lifted_having)
        else:
            for item in items:
                self._reject_aggregates(item.bound, item.node, "this context")
                if any(isinstance(e, GroupingCall) for e in walk(item.bound)):
                    raise self.error("GROUPING needs a GROUP BY", item.node)

        plan, exprs, order_refs = self._bind_windows(plan, [i.bound for i in items], order_refs)
        for item, e in zip(items, exprs):
            item.expr = e

        # Select list plus hidden ORDER BY expressions not in it.
        hidden: list[Expr] = [r for r in order_refs if isinstance(r, Expr)]
        out_fields = tuple(Field.fresh(i.name, i.bound.dtype) for i in items)
        hidden_fields = tuple(Field.fresh(render(h), h.dtype) for h in hidden)
        plan = Project(plan, (*[i.bound for i in items], *hidden), (*out_fields, *hidden_fields))
        positions: list[int] = []
        h = 0
        for r in order_refs:
            if isinstance(r, int):
                positions.append(r)
            else:
                positions.append(len(items) + h)
                h += 1

        if select.args.get("distinct") is not None:
            if select.args["distinct"].args.get("on"):
                raise self.error("DISTINCT ON is not supported", select.args["distinct"])
            if hidden:
                raise self.error("for SELECT DISTINCT, ORDER BY expressions must appear in "
                                 "the select list", order)
            fields = plan.schema
            new = tuple(Field.fresh(f.name, f.dtype) for f in fields)
            plan = Aggregate(plan, tuple(f.ref() for f in fields), new, (), ())

        if order is not None:
            fields = plan.schema
            keys = tuple(self._sort_key_at(fields[p], o)
                         for p, o in zip(positions, order.expressions))
            plan = Sort(plan, keys)
        plan = self._limit(select, plan)
        if hidden:
            kept = plan.schema[:len(items)]
            plan = Project(plan, tuple(f.ref() for f in kept),
                           tuple(Field.fresh(f.name, f.dtype) for f in kept))
        return plan

    @staticmethod
    def _sort_key_at(field: Field, item: exp.Ordered) -> SortKey:
        return sort_key(field.ref(), item)

    def _limit(self, node: exp.Expression, plan: LogicalPlan) -> LogicalPlan:
        limit_node = node.args.get("limit")
        offset_node = node.args.get("offset")
        fetch = node.args.get("fetch") if limit_node is None else None
        if limit_node is None and offset_node is None and fetch is None:
            return plan
        limit = None
        if limit_node is not None:
            limit = self._count(limit_node.expression, "LIMIT")
        elif fetch is not None:
            limit = self._count(fetch.args.get("count"), "FETCH")
        offset = self._count(offset_node.expression, "OFFSET") if offset_node is not None else 0
        return Limit(plan, limit, offset)

    def _count(self, node: exp.Expression | None, what: str) -> int:
        if node is None:
            return 1
        value = self.exprs.bind(node, Scope())
        if not isinstance(value, Literal) or not T.is_integer(value.dtype) or value.value < 0:
            raise self.error(f"{what} must be a non-negative integer constant", node)
        return int(value.value)

    def _expand_items(self, select: exp.Select, scope: Scope) -> list[_Item]:
        items: list[_Item] = []
        for node in select.expressions:
            if isinstance(node, exp.Star):
                for rel in scope.relations:
                    for f in rel.columns:
                        if f.name.lower() not in rel.hidden:
                            items.append(_Item(exp.column(f.name, rel.qualifier), f.name, False,
                                               f.ref()))
                continue
            if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
                rels = [r for r in scope.relations
                        if (r.qualifier or "").lower() == node.table.lower()]
                if not rels:
                    raise self.error(f"table or alias '{node.table}' not found in FROM", node)
                for f in rels[0].columns:
                    items.append(_Item(exp.column(f.name, node.table), f.name, False, f.ref()))
                continue
            if isinstance(node, exp.Alias):
                items.append(_Item(node.this, node.alias, True))
            elif isinstance(node, exp.Column):
                items.append(_Item(node, node.name, False))
            else:
                items.append(_Item(node, node.sql(dialect=DIALECT), False))
        if not items:
            raise self.error("SELECT needs at least one column", select)
        return items

    def _resolve_order(self, order: exp.Order | None, items: list[_Item],
                       scope: Scope) -> list[int | Expr]:
        """Each ORDER BY item as a select-list position or a bound expression."""
        if order is None:
            return []
        out: list[int | Expr] = []
        for ordered in order.expressions:
            node = ordered.this
            if isinstance(node, exp.Literal) and not node.is_string:
                pos = int(node.this)
                if not 1 <= pos <= len(items):
                    raise self.error(f"ORDER BY position {pos} is not in the select list "
                                     f"(1..{len(items)})", ordered)
                out.append(pos - 1)
                continue
            if isinstance(node, exp.Column) and not node.table:
                named = [i for i, it in enumerate(items)
                         if it.explicit_alias and it.name.lower() == node.name.lower()]
                if named:
                    out.append(named[0])
                    continue
            bound = self.exprs.bind(node, scope)
            same = [i for i, it in enumerate(items) if it.expr == bound]
            out.append(same[0] if same else bound)
        return out

    # -- aggregation ---------------------------------------------------------------------
    def _bind_input(self, select: exp.Select, scope: Scope) -> LogicalPlan:
        """FROM (with its joins) and WHERE of ``select``, registering relations in
        ``scope``."""
        plan = self._bind_from(select, scope)
        where = select.args.get("where")
        if where is not None:
            pred = self.exprs.boolean(self.exprs.bind(where.this, scope), where.this)
            self._reject_aggregates(pred, where, "WHERE")
            plan = Filter(plan, pred)
        return plan

    def _group_by(self, group: exp.Group | None, items: list[_Item], scope: Scope
                  ) -> tuple[list[Expr], list[Alternative] | None]:
        """The distinct group expressions, and the grouping sets as positions among them
        (None for a plain GROUP BY: one set of all of them)."""
        group_exprs: list[Expr] = []

        def position(node: exp.Expression) -> int:
            expr = self._group_expr(node, items, scope)
            if _has_agg(expr):
                raise self.error(f"aggregate functions are not allowed in GROUP BY: "
                                 f"'{node.sql()}'", node)
            if expr not in group_exprs:
                group_exprs.append(expr)
            return group_exprs.index(expr)

        def element(node: exp.Expression) -> Alternative:
            """One element of ROLLUP / CUBE / a grouping set: an expression or a list."""
            if isinstance(node, exp.Tuple):
                return tuple(position(e) for e in node.expressions)
            if isinstance(node, exp.Paren) and not isinstance(node.this, exp.Paren):
                return (position(node.this),)
            return (position(node),)

        def alternatives(node: exp.Expression) -> list[Alternative]:
            if isinstance(node, exp.Rollup):
                return rollup([element(e) for e in node.expressions])
            if isinstance(node, exp.Cube):
                return cube([element(e) for e in node.expressions])
            if isinstance(node, exp.GroupingSets):
                return [s for e in node.expressions for s in
                        (alternatives(e) if isinstance(e, exp.Rollup | exp.Cube)
                         else [element(e)])]
            return [(position(node),)]

        nodes = group.expressions if group is not None else []
        items_sets = [alternatives(node) for node in nodes]
        if not any(isinstance(n, exp.Rollup | exp.Cube | exp.GroupingSets) for n in nodes):
            return group_exprs, None
        sets = cross(items_sets)
        if any(contains_subquery(e) for e in group_exprs):
            raise self.error("ROLLUP, CUBE and GROUPING SETS over subqueries are not "
                             "supported", group)
        return group_exprs, sets

    def _bind_aggregate(self, plan: LogicalPlan, group: exp.Group | None, items: list[_Item],
                        scope: Scope, select: exp.Select,
                        rebind: Rebind):  # type: ignore[no-untyped-def]
        group_exprs, sets = self._group_by(group, items, scope)
        groupings: list[tuple[GroupingCall, Field]] = []
        group_fields = [Field.fresh(e.name if isinstance(e, ColumnRef) else render(e), e.dtype)
                        for e in group_exprs]
        aggs: list[AggCall] = []
        agg_fields: list[Field] = []
        local = {f.cid for f in scope.local_fields()}

        def lift(e: Expr, node: exp.Expression | None) -> Expr:
            for g, f in zip(group_exprs, group_fields):
                if e == g:
                    return f.ref()
            if isinstance(e, GroupingCall):
                missing = [a for a in e.args if a not in group_exprs]
                if missing:
                    raise self.error(f"GROUPING arguments must be GROUP BY expressions, not "
                                     f"'{render(missing[0])}'", node)
                if sets is None:  # one grouping set holding every group expression
                    return Literal(0, e.dtype)
                known = [g for g, _ in groupings]
                if e not in known:
                    name = f"GROUPING({', '.join(render(a) for a in e.args)})"
                    groupings.append((e, Field.fresh(name, e.dtype)))
                    known.append(e)
                return groupings[known.index(e)][1].ref()
            if isinstance(e, AggCall):
                if sets is not None and contains_subquery(e):
                    raise self.error("ROLLUP, CUBE and GROUPING SETS with subqueries in "
                                     "aggregates are not supported", node)
                if e not in aggs:
                    aggs.append(e)
                    agg_fields.append(Field.fresh(render(e), e.dtype))
                return agg_fields[aggs.index(e)].ref()
            if isinstance(e, ColumnRef):
                if e.cid in local:
                    raise self._not_grouped(e, node)
                return e
            if isinstance(e, SUBQUERY_TYPES):
                return self._rebase_subquery(e, group_refs, local, node)
            children = e.children()
            if not children:
                return e
            return e.with_children(tuple(lift(c, node) for c in children))

        # Correlated references from subqueries (e.g. in HAVING) to grouped columns must
        # point at the Aggregate's output, which is all the query above it can see.
        group_refs: dict[int, Expr] = {g.cid: f.ref() for g, f in zip(group_exprs, group_fields)
                                       if isinstance(g, ColumnRef)}

        # Lifting registers aggregates; the Aggregate node is built from the final lists
        # once every expression was lifted.
        pending = _PendingAggregate(plan, group_exprs, group_fields, aggs, agg_fields,
                                    sets, rebind, groupings)
        return pending, lift

    def _rebase_subquery(self, e: Expr, mapping: dict[int, Expr], local: set[int],
                         node: exp.Expression | None) -> Expr:
        """Rewrite a subquery's references to the grouped query's columns (see lift)."""
        def rebase(x: Expr) -> Expr | None:
            if isinstance(x, ColumnRef):
                if x.cid in mapping:
                    return mapping[x.cid]
                if x.cid in local:
                    raise self._not_grouped(x, node)
                return None
            if isinstance(x, SUBQUERY_TYPES):
                return dataclasses.replace(x, plan=rebase_plan(x.plan))  # type: ignore[type-var]
            return None

        def rebase_node(p: LogicalPlan) -> LogicalPlan | None:
            exprs = p.expressions()
            new = tuple(transform(x, rebase) for x in exprs)
            if all(a is b for a, b in zip(new, exprs)):
                return None
            return p.with_expressions(new)

        def rebase_plan(plan: LogicalPlan) -> LogicalPlan:
            return transform_plan(plan, rebase_node)

        return transform(e, rebase)

    def _not_grouped(self, ref: ColumnRef, node: exp.Expression | None) -> BindError:
        target = None
        if node is not None:
            for col in node.find_all(exp.Column):
                if col.name.lower() == ref.name.lower():
                    target = col
                    break
        return self.error(f"column '{ref.name}' must appear in the GROUP BY clause or be used "
                          "in an aggregate function", target or node)

    def _group_expr(self, node: exp.Expression, items: list[_Item], scope: Scope) -> Expr:
        if isinstance(node, exp.Literal) and not node.is_string:
            pos = int(node.this)
            if not 1 <= pos <= len(items):
                raise self.error(f"GROUP BY position {pos} is not in the select list", node)
            expr = items[pos - 1].expr
            assert expr is not None
            return expr
        if isinstance(node, exp.Column) and not node.table:
            try:
                return self.exprs.bind(node, scope)
            except BindError:
                for it in items:
                    if it.explicit_alias and it.name.lower() == node.name.lower():
                        assert it.expr is not None
                        return it.expr
                raise
        return self.exprs.bind(node, scope)

    def _reject_aggregates(self, expr: Expr, node: exp.Expression | None, where: str) -> None:
        if _has_agg(expr):
            raise self.error(f"aggregate functions are not allowed in {where}", node)

    # -- windows -------------------------------------------------------------------------
    def _bind_windows(self, plan: LogicalPlan, exprs: list[Expr],
                      order_refs: list[int | Expr]):  # type: ignore[no-untyped-def]
        calls: list[WindowCall] = []
        fields: list[Field] = []

        def lift(e: Expr) -> Expr:
            if isinstance(e, WindowCall):
                if e not in calls:
                    calls.append(e)
                    fields.append(Field.fresh(render(e), e.dtype))
                return fields[calls.index(e)].ref()
            if isinstance(e, SUBQUERY_TYPES) or not e.children():
                return e
            return e.with_children(tuple(lift(c) for c in e.children()))

        exprs = [lift(e) for e in exprs]
        order_refs = [lift(r) if isinstance(r, Expr) else r for r in order_refs]
        if calls:
            plan = Window(plan, tuple(calls), tuple(fields))
        return plan, exprs, order_refs

    # -- FROM ----------------------------------------------------------------------------
    def _bind_from(self, select: exp.Select, scope: Scope) -> LogicalPlan:
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is None:
            if select.args.get("joins"):
                raise self.error("JOIN without FROM", select)
            return Values((), ((),))
        plan, rels = self._bind_table_expr(from_.this, scope)
        scope.relations.extend(rels)
        for join in select.args.get("joins") or []:
            plan = self._bind_join(plan, join, scope)
        return plan

    def _bind_join(self, left: LogicalPlan, join: exp.Join, scope: Scope) -> LogicalPlan:
        if join.args.get("method"):
            raise self.error(f"{join.args['method']} joins are not supported", join)
        call = table_function_call(join.this)
        if call is not None:
            plan, rel = self._bind_table_function(join.this, call, left, join, scope)
            scope.relations.append(rel)
            return plan
        version = system_time_of(join.this)
        right_node = without_system_time(join.this) if version is not None else join.this
        right, rels = self._bind_table_expr(right_node, scope)
        side = (join.args.get("side") or "").lower()
        kind = (join.args.get("kind") or "").lower()
        on = join.args.get("on")
        using = join.args.get("using")
        left_rels = list(scope.relations)
        if version is not None:
            as_of = version.args["expression"]
            check_lookup_join(version, self.exprs.bind(as_of, Scope(
                parent=scope.parent, ctes=scope.ctes, relations=left_rels)), left, right,
                side or "inner", self.error)
        scope.relations.extend(rels)
        if kind in ("semi", "anti"):
            raise self.error(f"{kind.upper()} JOIN is not supported; use EXISTS", join)
        join_kind = side if side in ("left", "right", "full") else "inner"
        if on is None and not using:
            if side:
                raise self.error(f"{side.upper()} JOIN needs an ON or USING clause", join)
            if version is not None:
                raise self.error("FOR SYSTEM_TIME AS OF: a lookup join needs an ON or USING "
                                 "clause equating columns of the looked-up table", join)
            return Join(left, right, "cross")
        if using:
            cond_parts: list[Expr] = []
            for ident in using:
                name = ident.name
                lf = Scope(relations=left_rels).resolve(exp.Column(this=ident.copy()), self.sql)
                rf = Scope(relations=rels).resolve(exp.Column(this=ident.copy()), self.sql)
                common = T.common_type(lf.dtype, rf.dtype)
                if common is None:
                    raise self.error(f"USING column '{name}' has incompatible types", ident)
                cond_parts.append(Call("eq", (self.exprs.coerce(lf.ref(), common),
                                              self.exprs.coerce(rf.ref(), common)), T.BOOL))
                for rel in rels:
                    rel.hidden.add(name.lower())
            condition = conjoin(cond_parts)
        else:
            assert on is not None
            condition = self.exprs.boolean(self.exprs.bind(on, scope), on)
            self._reject_aggregates(condition, on, "JOIN conditions")
        return Join(left, right, join_kind, condition, lookup=version is not None)

    def _bind_table_expr(self, node: exp.Expression,
                         scope: Scope) -> tuple[LogicalPlan, list[Relation]]:
        alias_node = node.args.get("alias")
        alias = alias_node.name if alias_node is not None and alias_node.name else None
        column_aliases = [c.name for c in alias_node.columns] if alias_node is not None else []
        if system_time_of(node) is not None:
            raise self.error("FOR SYSTEM_TIME AS OF belongs to the right side of a JOIN "
                             "(a lookup join)", node)
        tvf = window_tvf_call(node) if isinstance(node, exp.Table) else None
        call = table_function_call(node)
        if call is not None:
            plan, rel = self._bind_table_function(node, call, None, None, scope)
            return plan, [rel]
        if tvf is not None:
            plan, default_names = bind_window_tvf(tvf, scope, self._bind_table_expr, self.error)
            qualifier = alias
        elif isinstance(node, exp.Table):
            if isinstance(node.this, exp.Anonymous | exp.Func):
                raise self.error(f"table function '{node.this.sql()}' is not supported", node)
            plan, default_names = self._bind_named_table(node, scope)
            qualifier = alias or node.name
        elif isinstance(node, exp.Subquery) and _is_parenthesized_join(node):
            if alias is not None:
                raise self.error("an alias on a parenthesized join is not supported", node)
            return self._bind_parenthesized_join(node.this, scope)
        elif isinstance(node, exp.Subquery):
            plan = self.bind_query(node.this, scope.parent, scope.ctes)
            plan = self._order_limit_by_output(node, plan, scope.parent, scope.ctes)
            default_names = [f.name for f in plan.schema]
            qualifier = alias
            plan = SubqueryAlias(plan, alias or "subquery")
        elif isinstance(node, exp.Values):
            plan = self._bind_values(node)
            default_names = [f.name for f in plan.schema]
            qualifier = alias
        elif isinstance(node, exp.Lateral | exp.Unnest):
            raise self.error(f"{type(node).__name__.upper()} is not supported", node)
        else:
            raise self.error(f"unsupported FROM item '{node.sql()[:60]}'", node)
        fields = list(plan.schema)
        if column_aliases:
            if len(column_aliases) > len(fields):
                raise self.error(f"'{alias}' has {len(fields)} columns but "
                                 f"{len(column_aliases)} column aliases", alias_node)
            default_names = column_aliases + default_names[len(column_aliases):]
        columns = [f.renamed(n) for f, n in zip(fields, default_names)]
        return plan, [Relation(qualifier, columns)]

    def _bind_parenthesized_join(self, node: exp.Expression,
                                 scope: Scope) -> tuple[LogicalPlan, list[Relation]]:
        """``(a JOIN b ON ...)`` in a FROM clause: the joins inside the parentheses are bound
        first, so a query can write a bushy or right-deep join tree. Their ON conditions see
        only the relations inside the parentheses (and enclosing queries), as in standard SQL;
        the relations are returned so the rest of the query sees them all."""
        inner = Scope(parent=scope.parent, ctes=scope.ctes)
        plan, rels = self._bind_table_expr(node, inner)
        inner.relations.extend(rels)
        for join in node.args.get("joins") or []:
            plan = self._bind_join(plan, join, inner)
        return plan, inner.relations

    def _bind_table_function(self, node: exp.Expression, call: exp.Expression,
                             left: LogicalPlan | None, join: exp.Join | None,
                             scope: Scope) -> tuple[LogicalPlan, Relation]:
        return bind_table_function(node, call, left, join, scope, self.catalog.functions.get,
                                   self.exprs.bind, self.exprs.coerce, self.error)

    def _bind_named_table(self, node: exp.Table, scope: Scope) -> tuple[LogicalPlan, list[str]]:
        name = node.name
        cte = scope.ctes.get(name.lower()) if not node.args.get("db") else None
        if cte is not None:
            plan = self.bind_query(cte.query, None, cte.visible)
            names = [f.name for f in plan.schema]
            if cte.columns:
                names = list(cte.columns) + names[len(cte.columns):]
            return SubqueryAlias(plan, name), names
        entry = self.catalog.get(name)
        if entry is None:
            from difflib import get_close_matches

            candidates = self.catalog.names() + [c for c in scope.ctes]
            close = get_close_matches(name.lower(), [c.lower() for c in candidates], n=1,
                                      cutoff=0.5)
            hint = ""
            if close:
                hint = f"; did you mean '{next(c for c in candidates if c.lower() == close[0])}'?"
            raise self.error(f"table '{name}' not found{hint}", node)
        if isinstance(entry, TableEntry):
            plan = bind_table(entry, node.alias or None, self.time_zone)
            return plan, [f.name for f in plan.schema]
        assert isinstance(entry, ViewEntry)
        return self._bind_view(entry, node)

    def _bind_view(self, view: ViewEntry, node: exp.Table) -> tuple[LogicalPlan, list[str]]:
        if view.name.lower() in self._views_in_progress:
            raise self.error(f"view '{view.name}' refers to itself", node)
        if self._view_parser is None:
            raise self.error("views need a parser", node)
        self._views_in_progress.append(view.name.lower())
        try:
            ast = self._view_parser(view.sql)
            inner = QueryBinder(self.catalog, view.sql, self._view_parser, self.time_zone)
            inner._views_in_progress = self._views_in_progress
            plan = inner.bind(ast)
        finally:
            self._views_in_progress.pop()
        names = [f.name for f in plan.schema]
        if view.column_names:
            names = list(view.column_names) + names[len(view.column_names):]
        return SubqueryAlias(plan, view.name), names

    # -- VALUES --------------------------------------------------------------------------
    def _bind_values(self, node: exp.Values) -> LogicalPlan:
        rows_ast = node.expressions
        if not rows_ast:
            raise self.error("VALUES needs at least one row", node)
        rows: list[list[Expr]] = []
        width = None
        for row in rows_ast:
            cells = row.expressions if isinstance(row, exp.Tuple) else [row]
            bound = [self.exprs.bind(c, Scope()) for c in cells]
            if width is None:
                width = len(bound)
            elif len(bound) != width:
                raise self.error("VALUES rows have different numbers of columns", row)
            rows.append(bound)
        assert width is not None
        columns = []
        for i in range(width):
            cells = [r[i] for r in rows]
            nodes = [(rows_ast[j].expressions if isinstance(rows_ast[j], exp.Tuple)
                      else [rows_ast[j]])[i] for j in range(len(rows))]
            columns.append(self.exprs.unify(cells, nodes, "VALUES"))
        fields = tuple(Field.fresh(f"col{i}", columns[i][0].dtype) for i in range(width))
        out_rows = tuple(tuple(columns[i][j] for i in range(width)) for j in range(len(rows)))
        return Values(fields, out_rows)

    # -- set operations ------------------------------------------------------------------
    def _bind_set_operation(self, node: exp.Expression, outer: Scope | None,
                            ctes: dict[str, CteDef]) -> LogicalPlan:
        kind = _SET_KINDS[type(node)]
        left = self.bind_query(node.this, outer, ctes)
        right = self.bind_query(node.expression, outer, ctes)
        lf, rf = left.schema, right.schema
        if len(lf) != len(rf):
            raise self.error(f"{kind.upper()}: the inputs have {len(lf)} and {len(rf)} columns",
                             node)
        types = []
        for a, b in zip(lf, rf):
            common = T.common_type(a.dtype, b.dtype)
            if common is None:
                raise self.error(f"{kind.upper()}: column '{a.name}' has types "
                                 f"{T.sql_name(a.dtype)} and {T.sql_name(b.dtype)}", node)
            types.append(common)
        left = self._cast_to(left, types)
        right = self._cast_to(right, types)
        distinct = node.args.get("distinct")
        all_ = distinct is False
        fields = tuple(Field.fresh(f.name, t) for f, t in zip(lf, types))
        plan: LogicalPlan = SetOp(left, right, kind, all_, fields)
        return self._order_limit_by_output(node, plan, outer, ctes)

    def _cast_to(self, plan: LogicalPlan, types: list) -> LogicalPlan:  # type: ignore[type-arg]
        if all(f.dtype.equals(t) for f, t in zip(plan.schema, types)):
            return plan
        exprs = tuple(self.exprs.coerce(f.ref(), t) for f, t in zip(plan.schema, types))
        return Project(plan, exprs, tuple(Field.fresh(f.name, t)
                                          for f, t in zip(plan.schema, types)))

    def _order_limit_by_output(self, node: exp.Expression, plan: LogicalPlan,
                               outer: Scope | None, ctes: dict[str, CteDef]) -> LogicalPlan:
        """ORDER BY / LIMIT attached to a set operation or parenthesized query: keys name
        output columns, by name or position (as PostgreSQL requires)."""
        order = node.args.get("order")
        if order is not None:
            scope = Scope(relations=[Relation(None, list(plan.schema))], ctes=ctes)
            keys = []
            for ordered in order.expressions:
                target = ordered.this
                if isinstance(target, exp.Literal) and not target.is_string:
                    pos = int(target.this)
                    if not 1 <= pos <= len(plan.schema):
                        raise self.error(f"ORDER BY position {pos} is not in the select list",
                                         ordered)
                    expr: Expr = plan.schema[pos - 1].ref()
                else:
                    expr = self.exprs.bind(target, scope)
                    if not isinstance(expr, ColumnRef):
                        raise self.error("ORDER BY of a set operation must name output "
                                         "columns or positions", ordered)
                keys.append(sort_key(expr, ordered))
            plan = Sort(plan, tuple(keys))
        return self._limit(node, plan)


# -- tables and their computed columns ---------------------------------------------------


def bind_table(entry: TableEntry, alias: str | None = None,
               time_zone: str = "UTC") -> LogicalPlan:
    """The plan reading ``entry``: a Scan of its physical columns and, when the table
    declares computed columns, a Project right above it that passes every physical column
    through under its scan id and computes the others, all in declaration order.

    So the source reads only physical columns, and a WATERMARK on a computed column names a
    field of that Project (not of the Scan): the streaming pass assigns watermarks above the
    Project in that case.
    """
    fields = tuple(Field.fresh(f.name, T.normalize_storage_type(f.type), f.nullable)
                   for f in entry.schema)
    scan = Scan(entry, fields, alias=alias)
    if not entry.computed:
        return scan
    exprs: list[Expr] = [f.ref() for f in fields]
    out: list[Field] = list(fields)
    for column in sorted(entry.computed, key=lambda c: c.position):
        text = column.expression
        node = cast(exp.Expression, sqlglot.parse_one(text, read=DIALECT))
        expr = bind_computed_column(column.name, node, fields, text, time_zone)
        at = min(column.position, len(out))
        exprs.insert(at, expr)
        out.insert(at, Field.fresh(column.name, expr.dtype, nullable=not column.is_proctime))
    return Project(scan, tuple(exprs), tuple(out))


def bind_computed_column(name: str, node: exp.Expression, physical: tuple[Field, ...],
                         sql: str, time_zone: str = "UTC") -> Expr:
    """Computed column ``name``'s expression bound against the table's physical columns
    (``sql`` is the text ``node``'s positions refer to, for error excerpts).

    Allowed: row-wise expressions over physical columns -- other computed columns are not
    visible, as in Flink -- and ``PROCTIME()`` as the whole expression. Aggregates, window
    functions and subqueries have no meaning for one row being read and are rejected.
    Every error names the computed column.
    """
    def error(message: str, at: exp.Expression | None) -> BindError:
        line, col = node_position(at)
        if isinstance(at, exp.Anonymous) and "col" in at.meta:
            # a function name is no identifier: its recorded column is the name's last one
            line, col = at.meta.get("line"), at.meta["col"] - len(at.name) + 1
        return BindError(f"computed column '{name}': {message}", line, col, sql)

    if _is_proctime(node):
        if node.expressions:
            raise error("PROCTIME() takes no arguments", node)
        return Call("proctime", (), PROCTIME_TYPE)
    nested = next((n for n in node.find_all(exp.Anonymous) if _is_proctime(n)), None)
    if nested is not None:
        raise error("PROCTIME() must be the whole expression (pt AS PROCTIME())", nested)

    def no_subquery(query: exp.Expression, scope: Scope) -> LogicalPlan:
        raise error("a subquery is not allowed here", query)

    binder = ExpressionBinder(sql, no_subquery, time_zone)
    try:
        expr = binder.bind(node, Scope(relations=[Relation(None, list(physical))]))
    except BindError as e:
        if e.bare_message.startswith("computed column '"):
            raise
        raise BindError(f"computed column '{name}': {e.bare_message}", e.line, e.col,
                        sql) from None
    if any(isinstance(e, AggCall | WindowCall) for e in walk(expr)):
        raise error("aggregate and window functions are not allowed here", node)
    return expr


def _is_proctime(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.upper() == "PROCTIME"


_SET_KINDS: dict[type, str] = {exp.Union: "union", exp.Intersect: "intersect",
                               exp.Except: "except"}


class _PendingAggregate:
    """An Aggregate whose aggregate list is still growing while expressions are lifted."""

    def __init__(self, input: LogicalPlan, group_exprs: list[Expr], group_fields: list[Field],
                 aggs: list[AggCall], agg_fields: list[Field],
                 sets: list[Alternative] | None, rebind: Rebind,
                 groupings: list[tuple[GroupingCall, Field]]) -> None:
        self.input = input
        self.group_exprs = group_exprs
        self.group_fields = group_fields
        self.aggs = aggs
        self.agg_fields = agg_fields
        self.sets = sets
        self.rebind = rebind
        self.groupings = groupings

    def build(self) -> LogicalPlan:
        if self.sets is not None:
            return union_of_grouping_sets(self.input, self.rebind, self.sets,
                                          self.group_exprs, self.group_fields, self.aggs,
                                          self.agg_fields, self.groupings)
        return Aggregate(self.input, tuple(self.group_exprs), tuple(self.group_fields),
                         tuple(self.aggs), tuple(self.agg_fields))


def _has_agg(e: Expr) -> bool:
    if isinstance(e, AggCall):
        return True
    if isinstance(e, SUBQUERY_TYPES):
        return False
    return any(_has_agg(c) for c in e.children())


def _is_parenthesized_join(node: exp.Subquery) -> bool:
    """True for ``(a JOIN b ON ...)``: parentheses around a joined table, not a query."""
    inner = node.this
    return (isinstance(inner, exp.Table | exp.Subquery)
            and bool(inner.args.get("joins")))
