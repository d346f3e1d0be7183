"""The Flink SQL statements sqlglot has no grammar for, read with one lark grammar.

``flink_statements.lark`` holds SET/RESET, SHOW TABLES/JOBS/[USER] FUNCTIONS, STOP JOB,
DESCRIBE [JOB], ANALYZE TABLE, CREATE/DROP FUNCTION, the openings and END of statement
sets, EXPLAIN's options (the statement explained is sqlglot's) and the SQL client's
HELP/QUIT. sqlglot stays the parser of queries, DDL and DML:
:func:`read_statement` answers None for every statement the grammar does not own, and the
caller hands those to sqlglot.

Contracts:

- The grammar reads one statement as the script splitter cut it, with its comments blanked
  (the caller passes that ``code``), so quotes and comments are read exactly as the splitter
  read them. Positions in errors are line:col of the whole script.
- A syntax error says what was expected where, in a reader's words, followed by the
  statement's form: a hint from :data:`_HINTS` when one was written for that parser state,
  else the terminals the parser accepts there. An error at the end of the statement points
  just after its last word.
- CREATE and DROP belong to sqlglot unless FUNCTION follows (after TEMPORARY/SYSTEM).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, Literal, NamedTuple

import sqlglot
from lark import Lark, Token, Transformer, Tree, UnexpectedInput
from lark.exceptions import VisitError
from lark.lexer import PatternStr
from sqlglot.tokens import TokenType

from flowsql.errors import SqlSyntaxError
from flowsql.sql.dialect import DIALECT
from flowsql.sql.function_statements import (
    CreateFunctionStatement,
    DropFunctionStatement,
    ShowFunctionsStatement,
)
from flowsql.sql.statement_parser import (
    AnalyzeStatement,
    DescribeJobStatement,
    DescribeStatement,
    ExplainStatement,
    SetStatement,
    ShowJobsStatement,
    ShowTablesStatement,
    Statement,
    StatementSetEnd,
    StatementSetOpening,
    StopJobStatement,
    parse_ast,
)
from flowsql.sql.syntax_errors import position as text_position

__all__ = ["client_command", "read_statement", "statement_heads"]

_GRAMMAR = Path(__file__).with_name("flink_statements.lark")

_STOP_JOB_FORM = "STOP JOB '<id>' [WITH SAVEPOINT ['<directory>']] [WITH DRAIN]"
_ANALYZE_FORM = ("ANALYZE TABLE <name> [COMPUTE STATISTICS [NOSCAN | FOR COLUMNS <column>, "
                "... | FOR ALL COLUMNS]]")
_STATEMENT_SET_FORM = "BEGIN STATEMENT SET; INSERT INTO ...; ...; END"

#: each statement's form by its first word, said after every syntax error in it
_FORMS = {
    "SET": "SET ['<key>' = '<value>']",
    "RESET": "RESET ['<key>']",
    "SHOW": "SHOW TABLES | SHOW JOBS | SHOW [USER] FUNCTIONS",
    "STOP": _STOP_JOB_FORM,
    "DESCRIBE": "DESCRIBE [TABLE] [EXTENDED] <name> | DESCRIBE JOB '<id>'",
    "DESC": "DESC [TABLE] [EXTENDED] <name> | DESC JOB '<id>'",
    "ANALYZE": _ANALYZE_FORM,
    "CREATE": ("CREATE [TEMPORARY] [SYSTEM] FUNCTION [IF NOT EXISTS] <name> AS "
               "'<module.function>' [LANGUAGE PYTHON]"),
    "DROP": "DROP [TEMPORARY] [SYSTEM] FUNCTION [IF EXISTS] <name>",
    "BEGIN": _STATEMENT_SET_FORM,
    "EXECUTE": "EXECUTE STATEMENT SET BEGIN INSERT INTO ...; ...; END",
    "END": _STATEMENT_SET_FORM,
    "EXPLAIN": "EXPLAIN [(COSTS ON|OFF)] [VERBOSE | ANALYZE | MEMO | PYSPARK | PLAN FOR] <query>",
}

#: hints for errors where the accepted terminals alone would read poorly: each is used for
#: an error in the situation (parser state and accepted terminals) its examples fail in;
#: ``{token}`` is replaced by the offending word. Within one situation, a hint whose example
#: failed on the same token type wins, else the first.
_HINTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("STOP JOB needs the job id as a string", ("STOP JOB", "STOP JOB 1")),
    ("expected WITH SAVEPOINT or WITH DRAIN or the end of the statement",
     ("STOP JOB '1' x",)),
    ("expected WITH DRAIN or the end of the statement", ("STOP JOB '1' WITH SAVEPOINT x",)),
    ("expected the end of the statement", ("STOP JOB '1' WITH DRAIN x",)),
    ("SHOW JOBS takes no arguments", ("SHOW JOBS x",)),
    ("unsupported statement: SHOW{token}; flowsql reads", ("SHOW x", "SHOW")),
    ("expected DESCRIBE JOB '<id>' (the job id as a string)", ("DESCRIBE JOB 1",)),
    ("expected the name of a table or view", ("DESCRIBE", "DESCRIBE 1", "DESC", "DESC 1")),
    ("expected TABLE after ANALYZE", ("ANALYZE t",)),
    ("ANALYZE TABLE needs a table name", ("ANALYZE TABLE",)),
    ("ANALYZE TABLE needs a column name", ("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS",
                                           "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS a,")),
    ("expected only one of NOSCAN, FOR COLUMNS or FOR ALL COLUMNS, or the end of the statement",
     ("ANALYZE TABLE t COMPUTE STATISTICS NOSCAN x",
      "ANALYZE TABLE t COMPUTE STATISTICS FOR ALL COLUMNS x")),
    ("expected the function's name", ("CREATE FUNCTION", "CREATE FUNCTION IF NOT EXISTS",
                                      "DROP FUNCTION", "DROP FUNCTION IF EXISTS")),
    # (at the end the parser has reduced the name, elsewhere not: two situations)
    ("expected AS '<module.function>'", ("CREATE FUNCTION f 'm.f'", "CREATE FUNCTION f")),
    ("expected the function's import path as a string", ("CREATE FUNCTION f AS m",)),
    ("expected a language after LANGUAGE", ("CREATE FUNCTION f AS 'm.f' LANGUAGE",)),
    ("expected the end of the statement or LANGUAGE <language>",
     ("CREATE FUNCTION f AS 'm.f' x",)),
    ("expected the setting's value after '='", ("SET a =",)),
    ("EXPLAIN needs a query", ("EXPLAIN", "EXPLAIN VERBOSE", "EXPLAIN (COSTS OFF)",
                               "EXPLAIN (COSTS OFF) VERBOSE")),
    ("expected EXPLAIN (COSTS ON|OFF) <query>", ("EXPLAIN (COSTS", "EXPLAIN (COSTS OFF",)),
)

#: what the parser's terminals are called in messages (keywords are their own words)
_READABLE = {"$END": "the end of the statement", "STRING": "a string", "NAME": "a name",
             "QUOTED_NAME": "a name", "BARE_KEY": "a setting key", "BARE_VALUE": "a value",
             "FIRST_STATEMENT": "an INSERT INTO statement", "EQUAL": "'='", "COMMA": "','",
             "SEMICOLON": "';'"}
#: accepted terminals left out of messages: a name may always go on with '.'
_UNSAID = {"DOT"}


class _NameInEveryState:
    """Post-lexer whose only job is ``always_accept``: every state of the contextual lexer
    also reads NAME, so a keyword is recognized as a whole word (``SHOW TABLESX`` is a
    name after SHOW, not TABLES and a stray X) and a misplaced word is one token."""

    always_accept = ("NAME",)

    def process(self, stream: Any) -> Any:
        return stream


@cache
def _parser() -> Lark:
    return Lark(_GRAMMAR.read_text(), parser="lalr", lexer="contextual",
                postlex=_NameInEveryState(), start=["statement", "client_command"],
                maybe_placeholders=True)


@cache
def statement_heads() -> frozenset[str]:
    """The words a statement of the grammar starts with (from its parse table)."""
    parser = _parser()
    accepted = parser.parse_interactive("", start="statement").accepts()
    words = set()
    for name in accepted:
        pattern = parser.get_terminal(name).pattern
        if isinstance(pattern, PatternStr):
            words.add(pattern.value.upper())
    return frozenset(words)


def read_statement(text: str, start: int, end: int, code: str, head: str) -> Statement | None:
    """The statement spanning ``text[start:end]`` when the grammar owns it, else None.

    ``code`` is ``text[start:end]`` with comments blanked (same length, newlines kept);
    ``head`` its first word in upper case, one of :func:`statement_heads`. SqlSyntaxError
    (line:col of ``text``) when the grammar owns the statement but it does not parse."""
    try:
        tree = _parser().parse(code, start="statement")
    except UnexpectedInput as error:
        if head in ("CREATE", "DROP") and "FUNCTION" in _accepted(error):
            return None  # CREATE TABLE, DROP VIEW, ...: sqlglot's
        raise _syntax_error(error, text, start, end, head) from None
    try:
        return _ToStatement(text, start, end).transform(tree)  # type: ignore[no-any-return]
    except VisitError as error:
        raise error.orig_exc from None


def client_command(text: str) -> Literal["help", "quit"] | None:
    """``help``/``HELP;``/``\\?``/``\\h`` -> "help", ``quit``/``exit``/``\\q`` -> "quit"
    (any case, trailing ``;`` allowed); None for anything else."""
    try:
        tree = _parser().parse(text.strip(), start="client_command")
    except UnexpectedInput:
        return None
    asked = tree.children[0]
    return "help" if isinstance(asked, Tree) and asked.data == "help" else "quit"


# --- errors -------------------------------------------------------------------------------

def _accepted(error: UnexpectedInput) -> set[str]:
    parser = getattr(error, "interactive_parser", None)
    if parser is not None:
        return set(parser.accepts())
    return set(getattr(error, "allowed", None) or getattr(error, "expected", None) or ())


Situation = tuple[int, frozenset[str]]


def _situation(error: UnexpectedInput) -> Situation | None:
    """Where the parser stopped: its state and the terminals it accepts there (the state
    alone can be shared by several contexts)."""
    parser = getattr(error, "interactive_parser", None)
    if parser is None:
        return None
    return parser.parser_state.position, frozenset(parser.accepts())


def _token_type(error: UnexpectedInput) -> str | None:
    token = getattr(error, "token", None)
    return None if token is None else str(token.type)


@cache
def _hints_by_situation() -> dict[Situation, list[tuple[str | None, str]]]:
    """(token type of the example's error, hint) for each situation the examples of
    :data:`_HINTS` fail in."""
    hints: dict[Situation, list[tuple[str | None, str]]] = {}
    for hint, examples in _HINTS:
        for example in examples:
            try:
                _parser().parse(example, start="statement")
            except UnexpectedInput as error:
                situation = _situation(error)
                if situation is not None:
                    hints.setdefault(situation, []).append((_token_type(error), hint))
                continue
            raise AssertionError(f"the example {example!r} parses")
    return hints


def _hint(error: UnexpectedInput) -> str | None:
    situation = _situation(error)
    found = _hints_by_situation().get(situation) if situation is not None else None
    if not found:
        return None
    token_type = _token_type(error)
    return next((hint for typ, hint in found if typ == token_type), found[0][1])


def _syntax_error(error: UnexpectedInput, text: str, start: int, end: int,
                  head: str) -> SqlSyntaxError:
    token = getattr(error, "token", None)
    at_end = token is not None and token.type == "$END"
    offset = end if at_end else start + (error.pos_in_stream or 0)
    hint = _hint(error)
    if hint is not None:
        word = str(token).split(None, 1)[0] if token is not None and not at_end else ""
        what = hint.format(token=f" {word}" if word else "")
    else:
        what = "expected " + " or ".join(_readable(_accepted(error)))
    return SqlSyntaxError(f"{what}: {_FORMS[head]}", *text_position(text, offset), text)


def _readable(accepted: set[str]) -> list[str]:
    """The accepted terminals in a reader's words: keywords first (in the grammar's
    order), then strings and names, the end of the statement last; duplicates once."""
    parser = _parser()
    order = {t.name: i for i, t in enumerate(parser.terminals)}
    words: list[str] = []
    for name in sorted(accepted - _UNSAID,
                       key=lambda n: (n == "$END", n in _READABLE, order.get(n, 0))):
        if name in _READABLE:
            word = _READABLE[name]
        else:
            pattern = parser.get_terminal(name).pattern
            word = (pattern.value.upper() if isinstance(pattern, PatternStr)
                    else name.replace("_", " "))
        if word not in words:
            words.append(word)
    return words


# --- trees to statements ------------------------------------------------------------------

class _Name(NamedTuple):
    """A name as the user meant it (quotes removed) and its offset in the script."""

    text: str
    at: int


def _unquote(token: Token) -> str:
    """A string's or quoted name's content; a doubled quote stands for one."""
    if token.type in ("STRING", "QUOTED_NAME"):
        quote = token[0]
        return token[1:-1].replace(quote * 2, quote)
    return str(token)


def _is_sql_keyword(word: str) -> bool:
    """Whether the dialect reads ``word`` as a keyword rather than a name."""
    tokens = sqlglot.Dialect.get_or_raise(DIALECT).tokenize(word)
    return len(tokens) != 1 or tokens[0].token_type != TokenType.VAR


class _ToStatement(Transformer):  # type: ignore[type-arg]
    """Turns a tree of the grammar into the statement dataclass; checks what the grammar
    cannot say (an empty savepoint directory, a keyword as a function name)."""

    def __init__(self, text: str, start: int, end: int) -> None:
        super().__init__()
        self.text, self.start, self.end = text, start, end

    def _error(self, message: str, token: Token | int, form: str) -> SqlSyntaxError:
        at = token if isinstance(token, int) else self.start + (token.start_pos or 0)
        return SqlSyntaxError(f"{message}: {form}", *text_position(self.text, at), self.text)

    def _statement(self, cls: type[Statement], **fields: Any) -> Statement:
        return cls(self.text, self.start, self.end, **fields)

    # names and values

    def name(self, children: list[Token]) -> _Name:
        token = children[0]
        return _Name(_unquote(token), self.start + (token.start_pos or 0))

    def qualified_name(self, children: list[_Name]) -> list[_Name]:
        return children

    def setting_key(self, children: list[Token]) -> str:
        return _unquote(children[0])

    setting_value = setting_key

    # SET, RESET, SHOW

    def set_statement(self, children: list[str | None]) -> Statement:
        key, value = children
        return self._statement(SetStatement, key=key, value=value)

    def reset_statement(self, children: list[str | None]) -> Statement:
        return self._statement(SetStatement, key=children[0], reset=True)

    def show_statement(self, children: list[Statement]) -> Statement:
        return children[0]

    def show_tables(self, _: list[Any]) -> Statement:
        return self._statement(ShowTablesStatement)

    def show_jobs(self, _: list[Any]) -> Statement:
        return self._statement(ShowJobsStatement)

    def show_functions(self, _: list[Any]) -> Statement:
        return self._statement(ShowFunctionsStatement)

    def show_user_functions(self, _: list[Any]) -> Statement:
        return self._statement(ShowFunctionsStatement, user_only=True)

    # jobs

    def stop_job(self, children: list[Any]) -> Statement:
        job, savepoint, drain = children
        directory = None
        if savepoint is not None and savepoint[1] is not None:
            directory = _unquote(savepoint[1])
            if not directory:
                raise self._error("the savepoint directory is empty", savepoint[1],
                                  _STOP_JOB_FORM)
        return self._statement(StopJobStatement, job_id=_unquote(job),
                               savepoint=savepoint is not None, directory=directory,
                               drain=drain is not None)

    def savepoint(self, children: list[Token | None]) -> tuple[Token, Token | None]:
        return children[0], children[1]  # type: ignore[return-value]

    def drain(self, children: list[Any]) -> bool:
        misplaced = children[1]
        if misplaced is not None:
            raise self._error("WITH SAVEPOINT comes before WITH DRAIN", misplaced[0],
                              _STOP_JOB_FORM)
        return True

    misplaced_savepoint = savepoint

    def describe_job(self, children: list[Token]) -> Statement:
        return self._statement(DescribeJobStatement, job_id=_unquote(children[0]))

    # DESCRIBE, ANALYZE

    def describe(self, children: list[Any]) -> Statement:
        _, extended, described = children
        return self._statement(DescribeStatement, name=described,
                               extended=extended is not None)

    def described(self, children: list[Any]) -> str:
        named = children[0]
        if isinstance(named, Token):  # a table called extended or job
            return str(named)
        return ".".join(part.text for part in named)

    def analyze(self, children: list[Any]) -> Statement:
        table, _, statistics = children
        columns = statistics if isinstance(statistics, list) else None
        return self._statement(AnalyzeStatement, table=table.text,
                               columns=None if columns is None else tuple(
                                   c.text for c in columns),
                               noscan=statistics == "noscan", table_at=table.at,
                               column_at=() if columns is None else tuple(
                                   c.at for c in columns))

    def noscan(self, _: list[Any]) -> str:
        return "noscan"

    def all_columns(self, _: list[Any]) -> str:
        return "all"

    def columns(self, children: list[Any]) -> list[_Name]:
        return children[1:]  # after FOR COLUMNS

    # functions

    def _function_name(self, parts: list[_Name], form: str) -> str:
        if len(parts) > 1:
            raise self._error("a function name has no catalog or database part",
                              parts[1].at, form)
        name = parts[0]
        quoted = self.text[name.at] in "\"`"
        if not quoted and _is_sql_keyword(name.text):
            raise self._error(f"'{name.text}' is a SQL keyword and cannot name a function",
                              name.at, form)
        return name.text

    def create_function(self, children: list[Any]) -> Statement:
        temporary, system, if_not_exists, name, path, language = children
        return self._statement(
            CreateFunctionStatement, name=self._function_name(name, _FORMS["CREATE"]),
            path=_unquote(path), language=language or "PYTHON",
            temporary=temporary is not None, system=system is not None,
            if_not_exists=if_not_exists is not None)

    def drop_function(self, children: list[Any]) -> Statement:
        temporary, system, if_exists, name = children
        return self._statement(
            DropFunctionStatement, name=self._function_name(name, _FORMS["DROP"]),
            temporary=temporary is not None, system=system is not None,
            if_exists=if_exists is not None)

    def language(self, children: list[Token]) -> str:
        return str(children[0]).upper()

    def temporary(self, _: list[Any]) -> bool:
        return True

    system = temporary

    # statement sets

    def begin_statement_set(self, _: list[Any]) -> Statement:
        return self._statement(StatementSetOpening)

    def execute_statement_set(self, children: list[Any]) -> Statement:
        first = children[1]
        first_at = None if first is None else self.start + (first.start_pos or 0)
        return self._statement(StatementSetOpening, first_at=first_at)

    def end_statement_set(self, _: list[Any]) -> Statement:
        return self._statement(StatementSetEnd)

    # EXPLAIN

    def explain(self, children: list[Any]) -> Statement:
        costs, mode, explained = children
        estimates = costs is None or costs
        word = "plan" if mode is None or mode.type == "PLAN_FOR" else str(mode).lower()
        if not estimates and word not in ("plan", "verbose"):
            raise self._error(f"COSTS OFF does not apply to EXPLAIN {str(mode).upper()}",
                              mode, _FORMS["EXPLAIN"])
        ast = parse_ast(self.text, self.start + (explained.start_pos or 0), self.end)
        return self._statement(ExplainStatement, ast=ast, mode=word, estimates=estimates)

    def costs(self, children: list[Token]) -> bool:
        return str(children[0]).upper() == "ON"

    def costs_switch(self, children: list[Token]) -> Token:
        return children[0]

    def explain_mode(self, children: list[Token]) -> Token:
        return children[0]
