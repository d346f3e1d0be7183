"""CREATE FUNCTION, DROP FUNCTION and SHOW FUNCTIONS (Flink SQL's forms):

    CREATE [TEMPORARY] [SYSTEM] FUNCTION [IF NOT EXISTS] name AS 'pkg.module.fn'
        [LANGUAGE PYTHON | JAVA | SCALA]
    DROP [TEMPORARY] [SYSTEM] FUNCTION [IF EXISTS] name
    SHOW [USER] FUNCTIONS

A session has one namespace of functions, so TEMPORARY and SYSTEM are accepted and
recorded but change no lookup; the language defaults to PYTHON (Flink's default is JAVA,
which flowsql cannot run; the session reports it). sqlglot has no grammar for these: the
Flink statement grammar reads them (``flink_statements.lark``, ``flink_statements.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from flowsql.sql.statement_parser import Statement

__all__ = ["CreateFunctionStatement", "DropFunctionStatement", "ShowFunctionsStatement"]


@dataclass(frozen=True)
class CreateFunctionStatement(Statement):
    name: str = ""
    path: str = ""
    language: str = "PYTHON"
    temporary: bool = False
    system: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True)
class DropFunctionStatement(Statement):
    name: str = ""
    temporary: bool = False
    system: bool = False
    if_exists: bool = False


@dataclass(frozen=True)
class ShowFunctionsStatement(Statement):
    """``SHOW FUNCTIONS`` (built-in and user functions) or ``SHOW USER FUNCTIONS``."""

    user_only: bool = False
