"""Statement sets in a script: ``EXECUTE STATEMENT SET BEGIN stmt; stmt; END`` and
``BEGIN STATEMENT SET; stmt; stmt; END`` (Flink SQL) span several ``;``-separated pieces;
this groups those pieces into one :class:`StatementSetStatement` of INSERTs. The opening
and the END are statements of the Flink statement grammar (``flink_statements.lark``).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot.tokens import Token

from flowsql.errors import FlowSQLError, SqlSyntaxError
from flowsql.sql.statement_parser import (
    InsertStatement,
    Statement,
    StatementSetEnd,
    StatementSetOpening,
    StatementSetStatement,
    read_flink_statement,
    statement_tokens,
)
from flowsql.sql.syntax_errors import position

__all__ = ["group_statement_sets", "statement_set_end", "statement_set_opening"]

Piece = tuple[int, int, list[Token]]
Parse = Callable[[str, int, int, list[Token]], Statement]


def _flink_statement(text: str, piece: Piece) -> Statement | None:
    try:
        return read_flink_statement(text, *piece)
    except FlowSQLError:
        return None


def statement_set_opening(text: str, piece: Piece) -> StatementSetOpening | None:
    """The opening of a statement set when ``piece`` is one; None for any other piece,
    also for one that does not parse (this never raises: the shell asks it of text being
    typed)."""
    statement = _flink_statement(text, piece)
    return statement if isinstance(statement, StatementSetOpening) else None


def statement_set_end(text: str, piece: Piece) -> bool:
    """Whether ``piece`` is the END of a statement set (never raises)."""
    return isinstance(_flink_statement(text, piece), StatementSetEnd)


def _error(message: str, text: str, at: int) -> SqlSyntaxError:
    return SqlSyntaxError(message, *position(text, at), text)


def group_statement_sets(text: str, pieces: list[Piece], parse: Parse) -> list[Statement]:
    """Parse every piece with ``parse``; the pieces of a statement set become one
    statement. Only INSERTs belong in a set, and a set needs its END."""
    out: list[Statement] = []
    index = 0
    while index < len(pieces):
        start, end, tokens = pieces[index]
        index += 1
        opening = parse(text, start, end, tokens)
        if isinstance(opening, StatementSetEnd):
            raise _error("END closes no statement set (BEGIN STATEMENT SET; INSERT INTO ...; "
                         "END)", text, start)
        if not isinstance(opening, StatementSetOpening):
            out.append(opening)
            continue
        members: list[tuple[int, Statement]] = []
        if opening.first_at is not None:
            first_tokens = statement_tokens(text, opening.first_at, end)
            members.append((opening.first_at,
                            parse(text, opening.first_at, end, first_tokens)))
        closed = None
        while index < len(pieces):
            s, e, toks = pieces[index]
            index += 1
            member = parse(text, s, e, toks)
            if isinstance(member, StatementSetEnd):
                closed = e
                break
            members.append((s, member))
        if closed is None:
            raise _error("the statement set has no END", text, start)
        inserts = []
        for at, statement in members:
            if not isinstance(statement, InsertStatement):
                raise _error("only INSERT INTO statements belong in a statement set", text, at)
            inserts.append(statement)
        if not inserts:
            raise _error("the statement set has no INSERT INTO statement", text, start)
        out.append(StatementSetStatement(text, start, closed, inserts=tuple(inserts)))
    return out
