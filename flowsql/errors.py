"""The error family every layer raises. Users see the message, never a traceback.

Each error carries enough to point at the cause: SQL errors carry line:col and a caret
excerpt, data errors carry file and offset, execution errors name the operator.
"""

from __future__ import annotations


class FlowSQLError(Exception):
    """Base of all errors flowsql reports to a user."""


class SqlError(FlowSQLError):
    """An error located in SQL text: syntax, unknown names, type mismatches.

    ``line`` and ``col`` are 1-based; when known, the message ends with the offending line
    and a caret under the spot.
    """

    def __init__(self, message: str, line: int | None = None, col: int | None = None,
                 sql: str | None = None) -> None:
        self.bare_message = message
        self.line = line
        self.col = col
        text = message
        if line is not None and col is not None:
            text = f"{message} (line {line}, col {col})"
            if sql is not None:
                lines = sql.splitlines()
                if 1 <= line <= len(lines):
                    text += f"\n  {lines[line - 1]}\n  {' ' * max(col - 1, 0)}^"
        super().__init__(text)


class SqlSyntaxError(SqlError):
    """The SQL text does not parse."""


class BindError(SqlError):
    """A name does not resolve or an expression is ill-typed."""


class CatalogError(FlowSQLError):
    """Creating, dropping or finding a catalog object failed."""


class ConfigError(FlowSQLError):
    """A setting is unknown or has an invalid value: names the key and, for an unknown
    key, the closest declared one."""


class OptionError(CatalogError, ConfigError):
    """A table's WITH option is unknown or has an invalid value (raised by CREATE TABLE,
    before the table exists): names the table, the connector and the option."""


class DataError(FlowSQLError):
    """Input data could not be read: names the file and, where known, the offset."""


class ExecutionError(FlowSQLError):
    """A query failed while running: names the operator."""


class ResourceExhausted(ExecutionError):
    """A blocking operator exceeded the memory budget (``execution.memory-budget``)."""


class PlanError(FlowSQLError):
    """The optimizer or a plan check rejected a plan: names the rule or node."""
