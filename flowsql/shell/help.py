"""What ``help``, ``HELP;`` and ``\\?`` print: the shell's commands and the statements.

One text, so the interpreter, the completer and the docs name the same commands. Statement
forms are those the parser reads (``flowsql.sql.statement_parser`` and the Flink statement
grammar).
"""

from __future__ import annotations

__all__ = ["HELP_TEXT", "META_COMMANDS"]

# what asks for help (help, HELP;, \?, \h) or to quit is the client_command rule of
# the Flink statement grammar (flowsql/sql/flink_statements.lark)

#: the meta-commands with what they do; the completer offers these after a ``\``
META_COMMANDS: tuple[tuple[str, str], ...] = (
    ("\\?", "show this help (also: help, HELP;)"),
    ("\\q", "quit (also: quit, exit, Ctrl-D)"),
    ("\\d", "list tables and views"),
    ("\\d NAME", "describe table or view NAME"),
)

_STATEMENTS: tuple[tuple[str, str], ...] = (
    ("SELECT ...;", "run a query"),
    ("INSERT INTO t SELECT ...;", "submit a job writing into t"),
    ("CREATE TABLE t (...) WITH (...);", "declare a table"),
    ("CREATE [OR REPLACE] VIEW v AS ...;", "declare a view"),
    ("CREATE FUNCTION f AS 'module.function';", "register a Python function"),
    ("DROP TABLE | VIEW | FUNCTION name;", "remove it from the session"),
    ("SHOW TABLES; SHOW FUNCTIONS;", "list tables, functions"),
    ("DESCRIBE name;", "a table's or view's columns"),
    ("EXPLAIN [VERBOSE|ANALYZE|MEMO] SELECT ...;", "the plan (ANALYZE runs it)"),
    ("ANALYZE TABLE t COMPUTE STATISTICS;", "statistics for the optimizer"),
    ("SET; SET 'key' = 'value'; RESET 'key';", "list, change, reset settings"),
    ("EXECUTE STATEMENT SET BEGIN ...; END;", "several INSERTs as one job"),
    ("SHOW JOBS; DESCRIBE JOB '<id>';", "the session's jobs, one job"),
    ("STOP JOB '<id>' [WITH SAVEPOINT] [WITH DRAIN];", "stop a job"),
)


def _table(rows: tuple[tuple[str, str], ...]) -> str:
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"  {name.ljust(width)}  {what}" for name, what in rows)


HELP_TEXT = f"""\
Type SQL statements ended by ';' (Enter before the ';' continues the statement).
A streaming query prints its changes until Ctrl-C; INSERT INTO runs as a job.
SET 'sql-client.execution.result-mode' = 'table' | 'changelog' | 'tableau'
chooses how a streaming query's changes are shown.
Tab completes keywords, functions, tables, columns, settings and table options.
Statements:
{_table(_STATEMENTS)}
Commands:
{_table(META_COMMANDS)}
Ctrl-C cancels the current input or the running statement."""

