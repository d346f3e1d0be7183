"""Is typed text inside a statement set still waiting for its END? Enter after the ``;`` of
``BEGIN STATEMENT SET;`` or of an INSERT inside a set must start a new line, not submit:
the set runs as one job once ``END;`` is typed."""

from __future__ import annotations

from flowsql.errors import FlowSQLError
from flowsql.sql.statement_parser import split_statements
from flowsql.sql.statement_set import statement_set_end, statement_set_opening

__all__ = ["inside_statement_set"]


def inside_statement_set(text: str) -> bool:
    """True when ``text`` opened a statement set that no ``END`` closed yet."""
    try:
        pieces = split_statements(text)
    except FlowSQLError:
        return False  # an unclosed quote: the lexical check keeps the input open anyway
    inside = False
    for piece in pieces:
        if inside:
            inside = not statement_set_end(text, piece)
        else:
            inside = statement_set_opening(text, piece) is not None
    return inside
