"""The ``flowsql`` sqlglot dialect: ANSI SQL plus the Flink SQL DDL forms.

The default sqlglot grammar already reads ``CREATE TABLE ... WITH ('k' = 'v')`` as table
properties; this dialect is the single place where flowsql-specific syntax is added.
"""

from __future__ import annotations

from sqlglot.dialects.dialect import Dialect


class FlowSQL(Dialect):
    """Registered under the name ``flowsql`` (sqlglot registers subclasses by class name)."""

    # NULLs sort last in both directions unless NULLS FIRST is written (DuckDB's default).
    NULL_ORDERING = "nulls_are_last"


DIALECT = "flowsql"
