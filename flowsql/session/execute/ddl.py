"""CREATE TABLE, CREATE VIEW and DROP: changes to the session's catalog.

A table's connector options are checked (and a filesystem table's schema inferred) when the
table is created, so a bad definition fails its DDL rather than the first query.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import sqlglot
from sqlglot import exp

from flowsql.errors import CatalogError
from flowsql.planner.catalog import TableEntry, ViewEntry
from flowsql.planner.config.connectors import find_connector, validate_table_options
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
    _check_keys(statement, declared, options["connector"])
    implementation = IMPLEMENTATIONS[options["connector"]]
    schema, options, statistics = implementation.describe(declared, options)
    entry = TableEntry(statement.name, schema, options, statistics, statement.watermark,
                       statement.computed, statement.primary_key, statement.metadata)
    if implementation.check is not None:
        implementation.check(entry)
    session.catalog.add(entry, replace=statement.replace, if_not_exists=statement.if_not_exists)
    return Result("ddl", message=f"Table '{statement.name}' created")


def _check_keys(statement: CreateTableStatement, declared: pa.Schema | None,
                connector_name: str) -> None:
    """Metadata columns must name a key the connector offers, with a type of the same kind
    as the connector's; a connector that needs a PRIMARY KEY gets one."""
    from flowsql.sql.sql_types import to_arrow_type

    connector = find_connector(connector_name)
    table = statement.name
    if connector.needs_primary_key and not statement.primary_key:
        raise CatalogError(f"table '{table}': the {connector.name} connector needs "
                           "PRIMARY KEY (...) NOT ENFORCED")
    for column in statement.metadata:
        key = connector.metadata_key(column.key)
        if key is None:
            offered = ", ".join(f"'{m.name}'" for m in connector.metadata) or "none"
            raise CatalogError(f"table '{table}': column '{column.name}': the "
                               f"{connector.name} connector has no metadata '{column.key}' "
                               f"(it offers: {offered})")
        assert declared is not None
        expected = to_arrow_type(sqlglot.parse_one(  # the declared type, as Flink documents it
            key.sql_type.removesuffix(" NOT NULL").removesuffix(" NULL"), into=exp.DataType,
            read="flowsql"))
        actual = declared.field(column.name).type
        if _type_kind(actual) != _type_kind(expected):
            raise CatalogError(f"table '{table}': metadata column '{column.name}' FROM "
                               f"'{column.key}' must be of type {key.sql_type}, not {actual}")


def _type_kind(t: pa.DataType) -> str:
    for kind, test in (("integer", pa.types.is_integer), ("timestamp", pa.types.is_timestamp),
                       ("string", pa.types.is_string), ("map", pa.types.is_map)):
        if test(t):
            return kind
    return str(t)


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
