"""Turning a decorated Python function into a catalog entry (:class:`UserFunction`).

Both ways of registering a function end here: ``session.register_function(fn, ...)``
(the path is the function's own module and qualified name) and ``CREATE FUNCTION f AS
'pkg.module.fn'`` (the path is imported now, so a wrong path fails the DDL, not the first
query). The decorator's spec gives the kind, the types and the hints; hints passed at
registration override the decorator's. Type strings are SQL types (``'DECIMAL(10, 2)'``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from flowsql.errors import BindError, CatalogError
from flowsql.planner import types as T
from flowsql.planner.udf import AGGREGATE, SCALAR, TABLE, FunctionHints, UserFunction
from flowsql.planner.udf_accumulator import is_accumulator_class, methods_of
from flowsql.planner.udf_loading import import_function
from flowsql.planner.udf_spec import FunctionSpec, TypeSpec, spec_of
from flowsql.sql.dialect import DIALECT
from flowsql.sql.sql_types import to_arrow_type

__all__ = ["HINT_NAMES", "check_function_name", "describe_function", "is_builtin_function"]

#: the hints registration may override (keyword arguments of the same names)
HINT_NAMES = tuple(f.name for f in dataclasses.fields(FunctionHints))
_DECORATORS = {SCALAR: "flowsql.udf", AGGREGATE: "flowsql.udaf", TABLE: "flowsql.udtf"}


def describe_function(name: str, path: str, temporary: bool = True,
                      hints: dict[str, Any] | None = None) -> UserFunction:
    """The catalog entry for the function at ``path`` registered as ``name``.

    CatalogError naming the path when it does not import, is not decorated, or declares
    a type that is not a SQL type; ``hints`` (keyword -> value, names of
    :class:`FunctionHints`) override the decorator's.
    """
    check_function_name(name)
    code = import_function(path)
    spec = spec_of(code)
    if spec is None:
        raise CatalogError(f"function '{path}' is not declared as a flowsql function: "
                           "decorate it with @flowsql.udf(result_type=...), "
                           "@flowsql.udaf(...) or @flowsql.udtf(...)")
    result_type = None
    if spec.kind != TABLE:
        if spec.result_type is None:
            raise CatalogError(f"function '{path}' declares no result type "
                               f"({_DECORATORS[spec.kind]}(result_type=...))")
        result_type = _arrow_type(spec.result_type, path, "result type")
    arg_types = None if spec.arg_types is None else tuple(
        _arrow_type(t, path, f"argument {i + 1} type") for i, t in enumerate(spec.arg_types))
    fields = tuple((field_name, _arrow_type(t, path, f"column '{field_name}' type"))
                   for field_name, t in spec.result_fields)
    accumulator = spec.kind == AGGREGATE and is_accumulator_class(code)
    mergeable, retractable = methods_of(path, code) if accumulator else (False, False)
    return UserFunction(name, path, spec.kind, result_type, fields, arg_types,
                        _hints(spec, hints or {}, path), temporary, accumulator=accumulator,
                        mergeable=mergeable, retractable=retractable)


def _hints(spec: FunctionSpec, overrides: dict[str, Any], path: str) -> FunctionHints:
    unknown = sorted(set(overrides) - set(HINT_NAMES))
    if unknown:
        raise CatalogError(f"function '{path}': unknown hint(s) {', '.join(unknown)} "
                           f"(hints: {', '.join(HINT_NAMES)})")
    hints = dataclasses.replace(spec.hints, **overrides)
    for key in ("selectivity",):
        value = getattr(hints, key)
        if value is not None and not 0.0 <= value <= 1.0:
            raise CatalogError(f"function '{path}': {key} must be within [0, 1], not {value}")
    for key in ("cost_per_row", "rows_per_call"):
        value = getattr(hints, key)
        if value is not None and value < 0:
            raise CatalogError(f"function '{path}': {key} must not be negative, not {value}")
    return hints


def _arrow_type(declared: TypeSpec, path: str, what: str) -> pa.DataType:
    if isinstance(declared, pa.DataType):
        return T.normalize_storage_type(declared)
    try:
        parsed = sqlglot.parse_one(declared, into=exp.DataType, read=DIALECT)
        return T.normalize_storage_type(to_arrow_type(parsed))
    except (ParseError, BindError, ValueError) as e:
        raise CatalogError(f"function '{path}': {what} '{declared}' is not a SQL type "
                           f"({getattr(e, 'bare_message', e)})") from None


def is_builtin_function(name: str) -> bool:
    """Whether ``name`` is a function the SQL layer already knows (built-in or special)."""
    from flowsql.sql.bind_expressions import builtin_function_key

    try:
        call = sqlglot.parse_one(f"{name}(1)", read=DIALECT)
    except ParseError:
        return True  # a keyword: cannot name a function
    return not isinstance(call, exp.Anonymous) or builtin_function_key(call)


def check_function_name(name: str) -> None:
    """A user function's name must be a plain identifier that no built-in uses (a call of
    it must reach the user's function, never a built-in of the same name)."""
    if not name.isidentifier():
        raise CatalogError(f"function name '{name}' is not an identifier")
    if is_builtin_function(name):
        raise CatalogError(f"function name '{name}' is a built-in function; choose another "
                           "name")
