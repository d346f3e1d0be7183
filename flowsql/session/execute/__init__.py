"""Running parsed statements against a session, one module per statement family.

This is where the layers meet: the sql layer parses and binds, the optimizer rewrites and
picks physical operators (``planning``), the runtime or spark executes (``query``,
``insert``). ``ddl`` changes the catalog, ``describe`` shows it, ``analyze`` measures a
table, ``set`` changes the settings, ``explain`` shows plans, ``jobs`` lists and stops the
submitted jobs.
:func:`execute_statement` dispatches on the statement's type through one table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flowsql.errors import ExecutionError, FlowSQLError
from flowsql.planner.nesting import deep_nesting, too_deep_message
from flowsql.session.execute.analyze import execute_analyze
from flowsql.session.execute.ddl import (
    execute_create_table,
    execute_create_view,
    execute_drop,
)
from flowsql.session.execute.describe import execute_describe, execute_show_tables
from flowsql.session.execute.describe_job import execute_describe_job
from flowsql.session.execute.explain import execute_explain
from flowsql.session.execute.functions import (
    execute_create_function,
    execute_drop_function,
    execute_show_functions,
)
from flowsql.session.execute.insert import execute_insert
from flowsql.session.execute.jobs import execute_show_jobs, execute_stop_job
from flowsql.session.execute.query import execute_query
from flowsql.session.execute.set import execute_set
from flowsql.session.execute.statement_set import execute_statement_set
from flowsql.sql.function_statements import (
    CreateFunctionStatement,
    DropFunctionStatement,
    ShowFunctionsStatement,
)
from flowsql.sql.statement_parser import (
    AnalyzeStatement,
    CreateTableStatement,
    CreateViewStatement,
    DescribeJobStatement,
    DescribeStatement,
    DropStatement,
    ExplainStatement,
    InsertStatement,
    QueryStatement,
    SetStatement,
    ShowJobsStatement,
    ShowTablesStatement,
    Statement,
    StatementSetStatement,
    StopJobStatement,
)

if TYPE_CHECKING:
    from flowsql.session.result import Result
    from flowsql.session.session import Session

__all__ = ["execute_statement"]


def execute_statement(session: Session, statement: Statement, text: str) -> Result:
    handler = _HANDLERS.get(type(statement))
    if handler is None:
        raise FlowSQLError(f"unsupported statement: {statement.source[:40]}")
    # Every stage walks expression trees recursively (rendering, planning, evaluation); the
    # stages with their own limit (parse, bind, optimize) report it more precisely.
    with deep_nesting(lambda: ExecutionError(too_deep_message("run"))):
        return handler(session, statement)


_HANDLERS: dict[type, Callable[[Session, Any], Result]] = {
    QueryStatement: execute_query,
    InsertStatement: execute_insert,
    StatementSetStatement: execute_statement_set,
    DescribeJobStatement: execute_describe_job,
    ExplainStatement: execute_explain,
    CreateTableStatement: execute_create_table,
    CreateViewStatement: execute_create_view,
    DropStatement: execute_drop,
    ShowTablesStatement: execute_show_tables,
    ShowJobsStatement: execute_show_jobs,
    StopJobStatement: execute_stop_job,
    DescribeStatement: execute_describe,
    SetStatement: execute_set,
    AnalyzeStatement: execute_analyze,
    CreateFunctionStatement: execute_create_function,
    DropFunctionStatement: execute_drop_function,
    ShowFunctionsStatement: execute_show_functions,
}
