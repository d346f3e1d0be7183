"""CREATE TABLE, CREATE VIEW and DROP: changes to the session's catalog.

A table's connector options are checked (and a filesystem table's schema inferred) when the
table is created, so a bad definition fails its DDL rather than the first query.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from flowsql.planner.catalog import TableEntry, ViewEntry
from flowsql.planner.config.connectors import validate_table_options
from flowsql.session.execute.planning import parse_view
from flowsql.session.result import Result
from flowsql.sql.bind_query import QueryBinder
from flowsql.sql.statement_parser import (
    CreateTableStatement,
    CreateViewStatement,
    DropStatement,
)

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["execute_create_table", "execute_create_view", "execute_drop"]


def execute_create_table(session: Session, statement: CreateTableStatement) -> Result:
    """Options are checked against the connector's declaration, then the runtime's
    implementation of the connector describes the table (schema, statistics)."""
    from flowsql.runtime.connectors.implementations import IMPLEMENTATIONS

    declared = _declared_schema(statement)
    options = validate_table_options(statement.name, statement.options,
                                     None if declared is None else declared.names)
    describe = IMPLEMENTATIONS[options["connector"]].describe
    schema, options, statistics = describe(declared, options)
    entry = TableEntry(statement.name, schema, options, statistics, statement.watermark,
                       statement.computed)
    session.catalog.add(entry, replace=statement.replace, if_not_exists=statement.if_not_exists)
    return Result("ddl", message=f"Table '{statement.name}' created")


def _declared_schema(statement: CreateTableStatement) -> pa.Schema | None:
    if statement.columns is None:
        return None
    return pa.schema([pa.field(c.name, c.dtype, c.nullable) for c in statement.columns])


def execute_create_view(session: Session, statement: CreateViewStatement) -> Result:
    entry = ViewEntry(statement.name, statement.query_sql, statement.column_names)
    # Bind once now so a broken view is reported at creation, not at first use.
    QueryBinder(session.catalog, statement.query_sql, parse_view).bind(
        parse_view(statement.query_sql))
    session.catalog.add(entry, replace=statement.replace, if_not_exists=statement.if_not_exists)
    return Result("ddl", message=f"View '{statement.name}' created")


def execute_drop(session: Session, statement: DropStatement) -> Result:
    kind = TableEntry if statement.kind == "table" else ViewEntry
    session.catalog.drop(statement.name, kind, if_exists=statement.if_exists)
    return Result("ddl", message=f"{statement.kind.capitalize()} '{statement.name}' dropped")
