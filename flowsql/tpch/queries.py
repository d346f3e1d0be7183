"""The 22 TPC-H queries with the specification's validation parameters, as plain ANSI SQL.

The text is shared by every engine (flowsql's and the DuckDB oracle), so it avoids vendor
syntax: intervals are ``interval '3' month``, substrings ``substring(x from 1 for 2)``, and
Q15's view is a ``with`` clause.
"""

from __future__ import annotations

from importlib import resources

from flowsql.errors import FlowSQLError

QUERY_NUMBERS: tuple[int, ...] = tuple(range(1, 23))


def load_query(n: int) -> str:
    """The SQL text of TPC-H query ``n`` (1..22), without a trailing semicolon."""
    if n not in QUERY_NUMBERS:
        raise FlowSQLError(f"there is no TPC-H query {n}: valid numbers are 1 to 22")
    source = resources.files("flowsql.tpch").joinpath("queries", f"q{n:02d}.sql")
    return source.read_text(encoding="utf-8").strip().rstrip(";")
