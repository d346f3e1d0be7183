"""Binding a call of a registered user-defined function.

A scalar function becomes a :class:`UdfCall`, an aggregate an ``AggCall`` whose
``function`` is set (its ``name`` is the registered name). Arguments are checked against
the declared ``arg_types`` and cast to them as a built-in's arguments are (an implicit
widening only); without declared types the argument count is checked against the Python
signature. Errors carry the call's line:col.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from sqlglot import exp

from flowsql.errors import CatalogError
from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, Expr, UdfCall
from flowsql.planner.udf import AGGREGATE, TABLE, UserFunction
from flowsql.planner.udf_loading import import_function
from flowsql.sql.scope import Scope

if TYPE_CHECKING:
    from flowsql.sql.bind_expressions import ExpressionBinder

__all__ = ["bind_user_call"]


def bind_user_call(binder: ExpressionBinder, function: UserFunction, node: exp.Anonymous,
                   scope: Scope, filt: Expr | None = None) -> Expr:
    """The bound call of ``function`` at ``node``."""
    name = function.name
    if function.kind == TABLE:
        raise binder.error(f"{name} is a table function: call it in FROM ... LATERAL "
                           f"TABLE({name}(...))", node)
    arg_nodes = list(node.expressions)
    if function.kind == AGGREGATE and len(arg_nodes) == 1 \
            and isinstance(arg_nodes[0], exp.Distinct):
        raise binder.error(f"{name}: DISTINCT is not supported for user-defined aggregates",
                           node)
    args = [binder.bind(a, scope) for a in arg_nodes]
    _check_count(binder, function, len(args), node)
    if function.arg_types is not None:
        for i, (arg, target) in enumerate(zip(args, function.arg_types)):
            if not (T.is_null(arg.dtype) or T.common_type(arg.dtype, target) == target):
                raise binder.error(f"{name}: argument {i + 1} must be {T.sql_name(target)}, "
                                   f"not {T.sql_name(arg.dtype)} in '{node.sql()}'",
                                   arg_nodes[i])
            args[i] = binder.coerce(arg, target, arg_nodes[i])
    assert function.result_type is not None
    if function.kind == AGGREGATE:
        if any(isinstance(e, AggCall) for a in args for e in _walk(a)):
            raise binder.error(f"aggregate calls cannot be nested in '{node.sql()}'", node)
        return AggCall(name, tuple(args), function.result_type, False, filt,
                       function=function)
    return UdfCall(function, tuple(args), function.result_type)


def _check_count(binder: ExpressionBinder, function: UserFunction, count: int,
                 node: exp.Expression) -> None:
    if function.arg_types is not None:
        expected = len(function.arg_types)
        if count != expected:
            raise binder.error(f"function {function.name} takes {expected} argument"
                               f"{'s' if expected != 1 else ''}, not {count}", node)
        return
    # a class-form aggregate is checked by accumulate(self, acc, *arguments)
    leading = 2 if function.accumulator else 0
    try:
        code = import_function(function.path)
        signature = inspect.signature(code.accumulate if function.accumulator else code)
    except (TypeError, ValueError, CatalogError):
        return  # no signature to check against (a builtin or a callable object)
    try:
        signature.bind(*range(leading + count))
    except TypeError:
        raise binder.error(f"function {function.name}{signature} does not take {count} "
                           f"argument{'s' if count != 1 else ''}", node) from None


def _walk(e: Expr):  # type: ignore[no-untyped-def]
    yield e
    for c in e.children():
        yield from _walk(c)
