"""CREATE FUNCTION, DROP FUNCTION and SHOW FUNCTIONS (Flink SQL's forms):

    CREATE [TEMPORARY] [SYSTEM] FUNCTION [IF NOT EXISTS] name AS 'pkg.module.fn'
        [LANGUAGE PYTHON | JAVA | SCALA]
    DROP [TEMPORARY] [SYSTEM] FUNCTION [IF EXISTS] name
    SHOW [USER] FUNCTIONS

A session has one namespace of functions, so TEMPORARY and SYSTEM are accepted and
recorded but change no lookup; the language defaults to PYTHON (Flink's default is JAVA,
which flowsql cannot run; the session reports it). Parsed from tokens: sqlglot has no
grammar for these. Errors point at the first token that does not fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot.tokens import Token, TokenType

from flowsql.errors import SqlSyntaxError
from flowsql.sql.statement_parser import Statement
from flowsql.sql.syntax_errors import position as text_position

__all__ = ["CreateFunctionStatement", "DropFunctionStatement", "ShowFunctionsStatement",
           "is_function_statement", "parse_function_statement"]

_CREATE_FORM = ("CREATE [TEMPORARY] [SYSTEM] FUNCTION [IF NOT EXISTS] <name> AS "
                "'<module.function>' [LANGUAGE PYTHON]")
_DROP_FORM = "DROP [TEMPORARY] [SYSTEM] FUNCTION [IF EXISTS] <name>"


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


def is_function_statement(tokens: list[Token]) -> bool:
    """CREATE/DROP followed by optional TEMPORARY/SYSTEM and FUNCTION."""
    if not tokens or tokens[0].text.upper() not in ("CREATE", "DROP"):
        return False
    for token in tokens[1:4]:
        word = token.text.upper()
        if word == "FUNCTION" and token.token_type != TokenType.STRING:
            return True
        if word not in ("TEMPORARY", "SYSTEM"):
            return False
    return False


class _Reader:
    """Reads a statement's tokens left to right."""

    def __init__(self, text: str, tokens: list[Token], form: str) -> None:
        self.text, self.tokens, self.form, self.index = text, tokens, form, 0

    def word(self, offset: int = 0) -> str | None:
        i = self.index + offset
        if i >= len(self.tokens) or self.tokens[i].token_type == TokenType.STRING:
            return None
        return self.tokens[i].text.upper()

    def take(self, *words: str) -> bool:
        """Consume ``words`` when they come next."""
        if all(self.word(i) == w for i, w in enumerate(words)):
            self.index += len(words)
            return True
        return False

    def error(self, message: str) -> SqlSyntaxError:
        at = (self.tokens[self.index].start if self.index < len(self.tokens)
              else self.tokens[-1].end + 1)
        return SqlSyntaxError(f"{message}: {self.form}", *text_position(self.text, at),
                              self.text)

    def name(self) -> str:
        if self.index >= len(self.tokens) or self.tokens[self.index].token_type not in (
                TokenType.VAR, TokenType.IDENTIFIER):
            raise self.error("expected the function's name")
        token = self.tokens[self.index]
        self.index += 1
        if self.word() == ".":
            raise self.error("a function name has no catalog or database part")
        return token.text

    def end(self) -> None:
        if self.index < len(self.tokens):
            raise self.error("expected the end of the statement")


def parse_function_statement(text: str, start: int, end: int,
                             tokens: list[Token]) -> Statement:
    """A CREATE FUNCTION or DROP FUNCTION statement (``is_function_statement``)."""
    create = tokens[0].text.upper() == "CREATE"
    reader = _Reader(text, tokens, _CREATE_FORM if create else _DROP_FORM)
    reader.index = 1
    temporary = reader.take("TEMPORARY")
    system = reader.take("SYSTEM")
    reader.take("FUNCTION")
    if not create:
        if_exists = reader.take("IF", "EXISTS")
        name = reader.name()
        reader.end()
        return DropFunctionStatement(text, start, end, name=name, temporary=temporary,
                                     system=system, if_exists=if_exists)
    if_not_exists = reader.take("IF", "NOT", "EXISTS")
    name = reader.name()
    if not reader.take("AS"):
        raise reader.error("expected AS '<module.function>'")
    if reader.index >= len(tokens) or tokens[reader.index].token_type != TokenType.STRING:
        raise reader.error("expected the function's import path as a string")
    path = tokens[reader.index].text
    reader.index += 1
    language = "PYTHON"
    if reader.take("LANGUAGE"):
        language = reader.word() or ""
        if not language:
            raise reader.error("expected a language after LANGUAGE")
        reader.index += 1
    reader.end()
    return CreateFunctionStatement(text, start, end, name=name, path=path, language=language,
                                   temporary=temporary, system=system,
                                   if_not_exists=if_not_exists)


def show_functions(text: str, start: int, end: int, words: list[str]) -> Statement | None:
    """``SHOW FUNCTIONS`` / ``SHOW USER FUNCTIONS``; None for any other SHOW."""
    if words == ["FUNCTIONS"]:
        return ShowFunctionsStatement(text, start, end)
    if words == ["USER", "FUNCTIONS"]:
        return ShowFunctionsStatement(text, start, end, user_only=True)
    return None
