"""User-defined functions in a session: ``session.register_function``, CREATE FUNCTION,
DROP FUNCTION and SHOW FUNCTIONS.

A function is registered by its import path only (see ``flowsql.planner.udf_loading``):
worker processes and Spark's Python workers import it themselves, nothing is pickled.
Hence a function that cannot be imported by its path -- a lambda, a function defined inside
another one, or one defined in ``__main__`` -- is refused at registration, at every
parallelism: a plan that works at parallelism 1 keeps working at 2 and on Spark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from flowsql.errors import CatalogError
from flowsql.planner import types as T
from flowsql.planner.udf import UserFunction
from flowsql.planner.udf_loading import callable_path
from flowsql.session.result import Result
from flowsql.sql.function_statements import (
    CreateFunctionStatement,
    DropFunctionStatement,
    ShowFunctionsStatement,
)
from flowsql.sql.user_functions import describe_function

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["execute_create_function", "execute_drop_function", "execute_show_functions",
           "register_function"]


def register_function(session: Session, fn: Any, name: str | None = None,
                      replace: bool = False, **hints: Any) -> UserFunction:
    """Register the decorated module-level function ``fn`` as ``name`` (default: its
    ``__name__``); ``hints`` override the decorator's. Returns the catalog entry."""
    path = callable_path(fn)
    function = describe_function(name or fn.__name__, path, temporary=True, hints=hints)
    session.catalog.functions.add(function, replace=replace)
    return function


def execute_create_function(session: Session, statement: CreateFunctionStatement) -> Result:
    if statement.language != "PYTHON":
        raise CatalogError(f"CREATE FUNCTION {statement.name}: LANGUAGE {statement.language} "
                           "is not supported; flowsql runs Python functions only "
                           "(LANGUAGE PYTHON)")
    existing = session.catalog.functions.get(statement.name)
    if existing is not None and statement.if_not_exists:
        return Result("ddl", message=f"Function '{statement.name}' already exists")
    function = describe_function(statement.name, statement.path,
                                 temporary=statement.temporary)
    session.catalog.functions.add(function, if_not_exists=statement.if_not_exists)
    return Result("ddl", message=f"Function '{statement.name}' created")


def execute_drop_function(session: Session, statement: DropFunctionStatement) -> Result:
    session.catalog.functions.drop(statement.name, if_exists=statement.if_exists)
    return Result("ddl", message=f"Function '{statement.name}' dropped")


def execute_show_functions(session: Session, statement: ShowFunctionsStatement) -> Result:
    """Built-in functions (kind ``built-in``) then the user's, each with its kind and, for
    a user function, its path and result type."""
    from flowsql.sql.bind_expressions import builtin_function_names

    rows: list[tuple[str, str, str | None, str | None]] = [
        (name, "built-in", None, None) for name in builtin_function_names()]
    for function in session.catalog.functions.functions():
        result = (T.sql_name(function.result_type) if function.result_type is not None
                  else "ROW<" + ", ".join(f"{n} {T.sql_name(t)}"
                                          for n, t in function.result_fields) + ">")
        rows.append((function.name, function.kind, function.path, result))
    if statement.user_only:
        rows = [r for r in rows if r[1] != "built-in"]
    names, kinds, paths, results = (list(c) for c in zip(*rows)) if rows else ([], [], [], [])
    table = pa.table({"function name": pa.array(names, pa.string()),
                      "kind": pa.array(kinds, pa.string()),
                      "path": pa.array(paths, pa.string()),
                      "result type": pa.array(results, pa.string())})
    return Result("show", table=table)
