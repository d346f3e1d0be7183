"""SHOW TABLES and DESCRIBE: what the session's catalog holds, as tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from flowsql.errors import CatalogError
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry, ViewEntry
from flowsql.session.execute.describe_statistics import with_statistics
from flowsql.session.execute.planning import parse_view
from flowsql.session.execute.stale_statistics import refresh_table_statistics
from flowsql.session.result import Result
from flowsql.sql.bind_query import QueryBinder, bind_table
from flowsql.sql.statement_parser import DescribeStatement, ShowTablesStatement

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["execute_describe", "execute_show_tables"]


def execute_show_tables(session: Session, statement: ShowTablesStatement) -> Result:
    names = session.catalog.names()
    kinds = ["view" if isinstance(session.catalog.get(n), ViewEntry) else "table"
             for n in names]
    return Result("show", table=pa.table({"name": pa.array(names, pa.string()),
                                          "kind": pa.array(kinds, pa.string())}))


def execute_describe(session: Session, statement: DescribeStatement) -> Result:
    entry = session.catalog.get(statement.name)
    if entry is None:
        raise CatalogError(f"table '{statement.name}' does not exist")
    if isinstance(entry, TableEntry) and entry.computed:
        fields = [(f.name, f.dtype, f.nullable) for f in bind_table(entry).schema]
    elif isinstance(entry, TableEntry):
        fields = [(f.name, T.normalize_storage_type(f.type), f.nullable) for f in entry.schema]
    else:
        plan = QueryBinder(session.catalog, entry.sql, parse_view).bind(parse_view(entry.sql))
        names = list(entry.column_names) + [f.name for f in plan.schema][len(entry.column_names):]
        fields = [(n, f.dtype, f.nullable) for n, f in zip(names, plan.schema)]
    described = pa.table({
        "name": pa.array([f[0] for f in fields], pa.string()),
        "type": pa.array([T.sql_name(f[1]) for f in fields], pa.string()),
        "null": pa.array(["YES" if f[2] else "NO" for f in fields], pa.string()),
    })
    if statement.extended and isinstance(entry, TableEntry):
        entry = refresh_table_statistics(session, entry)
        described = with_statistics(described, entry.statistics,
                                    {f[0]: f[1] for f in fields})
    return Result("describe", table=described)
