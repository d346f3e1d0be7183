"""Binding Flink's table function syntax to :class:`TableFunctionJoin`.

* ``FROM t, LATERAL TABLE(f(t.x)) [AS T(a, b)]`` and ``FROM t CROSS JOIN LATERAL
  TABLE(f(x))``: each row of ``t`` with each row ``f`` returns for it (rows without any
  are dropped); ``[INNER] JOIN LATERAL TABLE(f(x)) ON cond`` filters the pairs by ``cond``.
* ``FROM t LEFT JOIN LATERAL TABLE(f(x)) AS T(a) ON TRUE``: rows for which ``f`` returns
  nothing are kept once with NULLs. As in Flink, the condition must be TRUE (a condition
  would decide matching, which the function already did).
* ``FROM TABLE(f(1))`` / ``FROM LATERAL TABLE(f(1))``: the function alone, over one row.

Column names come from the alias list, else from the function's declared result fields;
the qualifier is the alias, else the function's name. Arguments are bound in the scope
of the FROM items to the left (that is what LATERAL means) and cast to the declared
argument types when the function declares them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from sqlglot import exp

from flowsql.errors import BindError
from flowsql.planner.expressions import AggCall, Expr, WindowCall, contains_subquery, walk
from flowsql.planner.logical import Filter, LogicalPlan, TableFunctionJoin, Values
from flowsql.planner.schema import Field
from flowsql.planner.udf import TABLE, UserFunction
from flowsql.sql.scope import Relation, Scope

ErrorFactory = Callable[[str, exp.Expression | None], BindError]


def table_function_call(node: exp.Expression) -> exp.Expression | None:
    """The ``f(args)`` of a ``[LATERAL] TABLE(f(args))`` FROM item, or None."""
    inner = node.this if isinstance(node, exp.Lateral | exp.Table) else None
    if not (isinstance(inner, exp.Anonymous) and inner.name.upper() == "TABLE"):
        return None
    call = inner.expressions[0] if len(inner.expressions) == 1 else None
    if isinstance(call, exp.Anonymous | exp.Func):
        return cast(exp.Expression, call)
    return None


def bind_table_function(node: exp.Expression, call: exp.Expression, left: LogicalPlan | None,
                        join: exp.Join | None, scope: Scope, lookup, bind_expr,  # type: ignore[no-untyped-def]
                        coerce, error: ErrorFactory) -> tuple[LogicalPlan, Relation]:
    """``left`` joined with the table function ``call`` (None: the function alone).

    ``lookup(name)`` finds a registered function, ``bind_expr(node, scope)`` binds an
    argument, ``coerce(expr, type, node)`` casts it; errors carry ``node``'s position.
    """
    name = (call.name if isinstance(call, exp.Anonymous)
            else call.sql_name() if isinstance(call, exp.Func) else call.name)
    function: UserFunction | None = lookup(name)
    if function is None or function.kind != TABLE:
        what = "is not a table function" if function is not None else "is not registered"
        raise error(f"table function '{name}' {what}", call)
    outer = False
    condition: exp.Expression | None = None
    if join is not None:
        side = (join.args.get("side") or "").lower()
        condition = join.args.get("on")
        if join.args.get("using"):
            raise error("a LATERAL TABLE join takes no USING clause", join)
        if side == "left":
            if not (isinstance(condition, exp.Boolean) and condition.this is True):
                raise error("LEFT JOIN LATERAL TABLE(...) needs ON TRUE",
                            condition if condition is not None else join)
            outer, condition = True, None
        elif side:
            raise error(f"{side.upper()} JOIN LATERAL TABLE(...) is not supported; use "
                        "LEFT JOIN or CROSS JOIN", join)
    args = _bind_args(call, function, scope, bind_expr, coerce, error)
    alias_node = node.args.get("alias")
    aliases = [c.name for c in alias_node.columns] if alias_node is not None else []
    declared = function.result_fields
    if len(aliases) > len(declared):
        raise error(f"table function '{function.name}' returns {len(declared)} columns but "
                    f"{len(aliases)} column aliases are given", alias_node)
    names = aliases + [n for n, _ in declared[len(aliases):]]
    fields = tuple(Field.fresh(n, t) for n, (_, t) in zip(names, declared))
    qualifier = alias_node.name if alias_node is not None and alias_node.name else function.name
    plan: LogicalPlan = TableFunctionJoin(left if left is not None else Values((), ((),)),
                                          function, args, fields, outer)
    relation = Relation(qualifier, list(fields))
    if condition is not None and not (isinstance(condition, exp.Boolean) and condition.this):
        scope.relations.append(relation)
        predicate = bind_expr(condition, scope)
        scope.relations.pop()
        plan = Filter(plan, predicate)
    return plan, relation


def _bind_args(call: exp.Expression, function: UserFunction, scope: Scope,
               bind_expr, coerce, error: ErrorFactory) -> tuple[Expr, ...]:  # type: ignore[no-untyped-def]
    nodes = list(call.expressions) if isinstance(call, exp.Anonymous) else [
        a for a in call.args.values() if isinstance(a, exp.Expression)]
    if not nodes:
        raise error(f"table function '{function.name}' needs at least one argument (it is "
                    "called with one array per argument)", call)
    args = [bind_expr(n, scope) for n in nodes]
    for a, n in zip(args, nodes):
        if contains_subquery(a):
            raise error("a table function argument cannot be a subquery", n)
        if any(isinstance(x, AggCall | WindowCall) for x in walk(a)):
            raise error("a table function argument cannot be an aggregate or window "
                        "function", n)
    declared = function.arg_types
    if declared is not None:
        if len(declared) != len(args):
            raise error(f"table function '{function.name}' takes {len(declared)} arguments, "
                        f"not {len(args)}", call)
        args = [coerce(a, t, n) for a, t, n in zip(args, declared, nodes)]
    return tuple(args)
