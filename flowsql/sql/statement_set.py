"""Statement sets in a script: ``EXECUTE STATEMENT SET BEGIN stmt; stmt; END`` and
``BEGIN STATEMENT SET; stmt; stmt; END`` (Flink SQL) span several ``;``-separated pieces;
this groups those pieces into one :class:`StatementSetStatement` of INSERTs.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot.tokens import Token

from flowsql.errors import SqlSyntaxError
from flowsql.sql.statement_parser import (
    InsertStatement,
    Statement,
    StatementSetStatement,
    _mask,
    _tokens,
)

__all__ = ["group_statement_sets", "statement_set_opening"]

Piece = tuple[int, int, list[Token]]
Parse = Callable[[str, int, int, list[Token]], Statement]


def _words(tokens: list[Token], n: int) -> list[str]:
    return [t.text.upper() for t in tokens[:n]]


def statement_set_opening(text: str, piece: Piece) -> list[Token] | None:
    """For a piece opening a statement set: the tokens of the first statement inside it
    (empty for ``BEGIN STATEMENT SET``); None for any other piece."""
    start, end, tokens = piece
    if _words(tokens, 3) == ["BEGIN", "STATEMENT", "SET"] and len(tokens) == 3:
        return []
    if _words(tokens, 1) == ["EXECUTE"]:
        # the tokenizer reads EXECUTE as a command swallowing the rest: tokenize the rest
        rest = _tokens(_mask(text, tokens[0].end + 1, end))
        if _words(rest, 3) == ["STATEMENT", "SET", "BEGIN"]:
            return rest[3:]
    return None


def group_statement_sets(text: str, pieces: list[Piece], parse: Parse) -> list[Statement]:
    """Parse every piece with ``parse``; the pieces of a statement set become one
    statement. Only INSERTs belong in a set, and a set needs its END."""
    out: list[Statement] = []
    index = 0
    while index < len(pieces):
        start, end, tokens = pieces[index]
        first = statement_set_opening(text, pieces[index])
        index += 1
        if first is None:
            out.append(parse(text, start, end, tokens))
            continue
        members = [(first[0].start, end, first)] if first else []
        closed = None
        while index < len(pieces):
            piece = pieces[index]
            index += 1
            if _words(piece[2], 2) == ["END"]:
                closed = piece
                break
            members.append(piece)
        if closed is None:
            raise SqlSyntaxError("the statement set has no END", tokens[0].line,
                                 tokens[0].col - len(tokens[0].text) + 1, text)
        inserts = []
        for s, e, toks in members:
            statement = parse(text, s, e, toks)
            if not isinstance(statement, InsertStatement):
                raise SqlSyntaxError("only INSERT INTO statements belong in a statement set",
                                     toks[0].line, toks[0].col - len(toks[0].text) + 1, text)
            inserts.append(statement)
        if not inserts:
            raise SqlSyntaxError("the statement set has no INSERT INTO statement",
                                 tokens[0].line, tokens[0].col - len(tokens[0].text) + 1, text)
        out.append(StatementSetStatement(text, start, closed[1], inserts=tuple(inserts)))
    return out
