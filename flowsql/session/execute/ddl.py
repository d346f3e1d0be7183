"""CREATE TABLE, CREATE VIEW and DROP: changes to the session's catalog.

A table's connector options are checked (and a filesystem table's schema inferred) when the
table is created, so a bad definition fails its DDL rather than the first query.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pyarrow as pa

from flowsql.errors import CatalogError
from flowsql.planner.catalog import TableEntry, ViewEntry
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

__all__ = ["SINK_ONLY_CONNECTORS", "SUPPORTED_FORMATS", "execute_create_table",
           "execute_create_view", "execute_drop"]

SUPPORTED_FORMATS = ("parquet", "csv", "json")
#: connectors a table can only be written to (INSERT INTO)
SINK_ONLY_CONNECTORS = ("print", "blackhole")


def execute_create_table(session: Session, statement: CreateTableStatement) -> Result:
    options = dict(statement.options)
    connector = options.setdefault("connector", "filesystem")
    if connector == "filesystem":
        entry = _filesystem_table(statement, options)
    elif connector == "datagen":
        entry = _datagen_table(statement, options)
    elif connector in SINK_ONLY_CONNECTORS:
        schema = _declared_schema(statement)
        if schema is None:
            raise CatalogError(f"table '{statement.name}': the {connector} connector needs a "
                               "column list")
        entry = TableEntry(statement.name, schema, options, watermark=statement.watermark,
                           computed=statement.computed)
    else:
        raise CatalogError(f"unknown connector '{connector}' for table '{statement.name}' "
                           "(supported: filesystem, datagen, print, blackhole)")
    session.catalog.add(entry, replace=statement.replace, if_not_exists=statement.if_not_exists)
    return Result("ddl", message=f"Table '{statement.name}' created")


def _declared_schema(statement: CreateTableStatement) -> pa.Schema | None:
    if statement.columns is None:
        return None
    return pa.schema([pa.field(c.name, c.dtype, c.nullable) for c in statement.columns])


def _filesystem_table(statement: CreateTableStatement, options: dict[str, str]) -> TableEntry:
    from flowsql.runtime.connectors.filesystem import infer_schema, table_statistics

    if "path" not in options:
        raise CatalogError(f"table '{statement.name}': the filesystem connector needs 'path'")
    fmt = options.setdefault("format", "parquet").lower()
    options["format"] = fmt
    if fmt not in SUPPORTED_FORMATS:
        raise CatalogError(f"table '{statement.name}': unknown format '{fmt}' "
                           f"(supported: {', '.join(SUPPORTED_FORMATS)})")
    options["path"] = os.path.abspath(os.path.expanduser(options["path"]))
    schema = _declared_schema(statement)
    if schema is None:
        schema = infer_schema(options)
    return TableEntry(statement.name, schema, options, table_statistics(options),
                      statement.watermark, statement.computed)


def _datagen_table(statement: CreateTableStatement, options: dict[str, str]) -> TableEntry:
    """Validated now (bad options fail the DDL, not the first query)."""
    from flowsql.planner.catalog import TableStatistics
    from flowsql.runtime.connectors.datagen import DatagenTable

    schema = _declared_schema(statement)
    if schema is None:
        raise CatalogError(f"table '{statement.name}': the datagen connector needs a column "
                           "list")
    table = DatagenTable(schema, options)
    return TableEntry(statement.name, schema, options,
                      TableStatistics(row_count=table.total_rows), statement.watermark,
                      statement.computed)


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
