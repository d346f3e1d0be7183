"""Where the cursor is in a statement being typed, for Tab completion.

:func:`completion_context` reads the text before the cursor (and the rest of the statement
after it, for the tables a query names later, as in ``SELECT o.| FROM orders o``) and says
what belongs at the cursor: a statement's first keyword (or the one after it: ``SHOW``
``TABLES``; EXPLAIN's modes), a table name, a column (of any
table in scope, or of the one an ``alias.`` names), a setting key or value after ``SET``,
a connector option key or value inside ``WITH (...)`` (with the columns of the
``CREATE TABLE`` being typed, for per-column options), or a shell command after ``\\``.
Inside an unclosed quoted identifier (`` `ord`` or ``"ord``) the context is the one the
name would have unquoted, and ``identifier_quote`` says which quote closes it.

The tokens are the parser's (:func:`flowsql.sql.statement_parser.script_tokens`), so a
quote or comment means here what it means when the statement runs. Typed text is
incomplete by nature: the analysis never raises, and text it cannot read (inside a comment
or an unclosed quoted identifier) gives the context ``none``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Literal

from sqlglot.tokens import Token, TokenType

from flowsql.errors import SqlSyntaxError
from flowsql.sql.statement_parser import script_tokens

__all__ = ["SECOND_WORDS", "CompletionContext", "ContextKind", "completion_context"]

ContextKind = Literal[
    "none", "statement_start", "second_word", "expression", "table", "qualified_column", "setting_key",
    "setting_value", "option_key", "option_value", "meta_command"]

#: tokens after which a table or view name is expected
_TABLE_BEFORE = frozenset({"FROM", "JOIN", "INTO", "TABLE", "DESCRIBE", "DESC", "UPDATE",
                           "VIEW"})
#: words that end a FROM clause's comma-separated list of tables
_FROM_ENDS = frozenset({"WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "UNION", "EXCEPT",
                        "INTERSECT", "SELECT", "ON", "USING", "WINDOW", "QUALIFY"})
#: ``EXPLAIN`` and its modes: the tokenizer reads EXPLAIN as a command swallowing the rest,
#: so the statement after them is analysed on its own
_EXPLAIN = re.compile(r"^\s*EXPLAIN(\s*\(\s*COSTS\s+\w+\s*\))?(\s+(VERBOSE|ANALYZE|PYSPARK|MEMO|"
                      r"PLAN\s+FOR))?\s+", re.IGNORECASE)
#: what EXPLAIN has been given so far (the statement up to the word being typed), in the
#: order the parser reads it, as the key of the words that may come next (SECOND_WORDS)
_EXPLAIN_SO_FAR = (
    (re.compile(r"EXPLAIN\s*", re.IGNORECASE), "EXPLAIN"),
    (re.compile(r"EXPLAIN\s*\(\s*", re.IGNORECASE), "EXPLAIN ("),
    (re.compile(r"EXPLAIN\s*\(\s*COSTS\s+", re.IGNORECASE), "EXPLAIN (COSTS"),
    (re.compile(r"EXPLAIN\s*\(\s*COSTS\s+\w+\s*\)\s*", re.IGNORECASE), "EXPLAIN (COSTS OFF)"),
    (re.compile(r"EXPLAIN(\s*\(\s*COSTS\s+\w+\s*\))?\s+PLAN\s+", re.IGNORECASE), "EXPLAIN PLAN"),
)
_WORD = re.compile(r"[\w$]*$")
#: setting keys are written unquoted too (``SET execution.batch-size = 1``)
_KEY_WORD = re.compile(r"[\w$.\-]*$")
_QUALIFIER = re.compile(r"(?:([\w$]+)|`([^`]*)`|\"([^\"]*)\")\.$")
_SENTINEL = "zz_cursor_zz"


@dataclass(frozen=True)
class CompletionContext:
    """What is being completed.

    ``word`` is the typed prefix the completion replaces; ``quoted``: the cursor is inside
    a ``'...'`` opened before ``word`` (completions then close the quote). ``qualifier``:
    the alias or table before ``.`` (kind ``qualified_column``). ``key``: the setting or
    option whose value is typed. ``options``: the ``'key' = 'value'`` pairs already
    written in the ``WITH (...)``. ``tables``: the tables of the statement, as
    ``(alias or name, table name)`` pairs. ``identifier_quote``: the cursor is inside a
    quoted identifier opened with this character (names then close it). ``columns``: the
    columns declared by the ``CREATE TABLE`` whose ``WITH (`` holds the cursor.
    """

    kind: ContextKind
    word: str = ""
    quoted: bool = False
    qualifier: str | None = None
    key: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    tables: tuple[tuple[str, str], ...] = ()
    identifier_quote: str | None = None
    columns: tuple[str, ...] = ()


_NONE = CompletionContext("none")

#: the words that may follow a statement's first word (context ``second_word``, whose
#: ``key`` is the first word), and those that may follow EXPLAIN's words so far
_EXPLAINED = ("SELECT", "WITH")
SECOND_WORDS: dict[str, tuple[str, ...]] = {
    "EXPLAIN": ("ANALYZE", "VERBOSE", "MEMO", "PYSPARK", "PLAN", "(COSTS OFF)", *_EXPLAINED),
    "EXPLAIN (": ("COSTS",),
    "EXPLAIN (COSTS": ("ON", "OFF"),
    "EXPLAIN (COSTS OFF)": ("VERBOSE", *_EXPLAINED),
    "EXPLAIN PLAN": ("FOR",),
    "EXPLAIN MODE": _EXPLAINED,
    "CREATE": ("TABLE", "VIEW", "FUNCTION", "OR", "TEMPORARY"),
    "DROP": ("TABLE", "VIEW", "FUNCTION", "TEMPORARY"),
    "SHOW": ("TABLES", "FUNCTIONS", "USER", "JOBS"),
    "INSERT": ("INTO",),
    "STOP": ("JOB",),
    "ANALYZE": ("TABLE",),
}


def completion_context(before: str, after: str = "") -> CompletionContext:
    """The context at the cursor between ``before`` and ``after``; never raises."""
    try:
        return _context(before, after)
    except Exception:  # a completer must not break typing, whatever the text
        return _NONE


def _tokens(text: str) -> list[Token] | None:
    try:
        return script_tokens(text)
    except SqlSyntaxError:
        return None


def _raw_statement_text(head: str) -> str | None:
    """The text of the statement the cursor is in, from its start to ``head``'s end."""
    tokens = _tokens(head)
    if tokens is None:
        return None
    ends = [t.end for t in tokens if t.token_type == TokenType.SEMICOLON]
    return head[ends[-1] + 1:] if ends else head


def _statement_text(head: str) -> str | None:
    """``_raw_statement_text`` without an EXPLAIN and its modes: the statement explained."""
    statement = _raw_statement_text(head)
    if statement is None:
        return None
    explain = _EXPLAIN.match(statement)
    return statement[explain.end():] if explain else statement


def _explain_so_far(head: str) -> str | None:
    """When the statement so far is EXPLAIN and some of its modes, with the statement
    explained not begun: the key of the words that may follow in SECOND_WORDS."""
    statement = (_raw_statement_text(head) or "").lstrip()
    found = None
    for pattern, key in _EXPLAIN_SO_FAR:
        if pattern.fullmatch(statement):
            found = key
    if found is None and _EXPLAIN.fullmatch(statement) and statement.split()[-1].upper() \
            in ("VERBOSE", "ANALYZE", "PYSPARK", "MEMO", "FOR"):
        return "EXPLAIN MODE"
    return found


def _open_identifier(text: str) -> int | None:
    """Where the quoted identifier (`` `...`` or ``"...``) the cursor is in opens; None
    when the cursor is in none."""
    for index in range(len(text) - 1, -1, -1):
        quote = text[index]
        if quote not in "`\"":
            continue
        if quote not in text[index + 1:] and _tokens(text[:index]) is not None:
            return index
        return None
    return None


def _open_quote(text: str) -> int | None:
    """Where the ``'`` string the cursor is in opens; None when the cursor is in no string
    (or in something else left open: a quoted identifier or a block comment)."""
    for index in range(len(text) - 1, -1, -1):
        if text[index] != "'":
            continue
        rest = text[index + 1:].replace("''", "")
        if "'" not in rest and _tokens(text[:index]) is not None:
            return index
    return None


def _in_comment(text: str) -> bool:
    """Does ``text`` end inside a comment? A word typed after it would not be a token (a
    command token such as EXPLAIN's takes the rest of the text as its argument)."""
    tokens = _tokens(text + " " + _SENTINEL)
    return not tokens or not tokens[-1].text.endswith(_SENTINEL)


def _context(before: str, after: str) -> CompletionContext:
    line = before.lstrip()
    if line.startswith("\\") and "\n" not in line:
        return _meta_context(line)
    if _tokens(before) is None:
        identifier = _open_identifier(before)
        if identifier is not None:
            context = _statement_context(before[:identifier], before[identifier + 1:], False,
                                         after)
            if context.kind not in ("table", "qualified_column", "expression"):
                return _NONE
            return dataclasses.replace(context, identifier_quote=before[identifier])
        quote = _open_quote(before)
        if quote is None:
            return _NONE
        return _statement_context(before[:quote], before[quote + 1:], True, after="")
    if _in_comment(before):
        return _NONE
    statement = _statement_text(before) or ""
    words = statement.split(None, 1)
    setting = bool(words) and words[0].upper() in ("SET", "RESET")
    word = (_KEY_WORD if setting else _WORD).search(before).group()  # type: ignore[union-attr]
    return _statement_context(before[:len(before) - len(word)], word, False, after)


def _meta_context(line: str) -> CompletionContext:
    described = re.match(r"\\d\s+([\w$]*)$", line)
    if described:
        return CompletionContext("table", word=described.group(1))
    if re.match(r"\\\w*$", line):
        return CompletionContext("meta_command", word=line)
    return _NONE


def _statement_context(head: str, word: str, quoted: bool, after: str) -> CompletionContext:
    qualifier = None
    if not quoted:
        match = _QUALIFIER.search(head)
        if match:
            qualifier = next(g for g in match.groups() if g is not None)
            head = head[:match.start()]
    statement = _statement_text(head)
    if statement is None:
        return _NONE
    explain = _explain_so_far(head) if not quoted else None
    if explain is not None:
        return CompletionContext("second_word", word, key=explain)
    tokens = _tokens(statement) or []
    tables = _tables_in_scope([*tokens, *_rest_of_statement(after)])
    if qualifier is not None:
        return CompletionContext("qualified_column", word, qualifier=qualifier, tables=tables)
    first = tokens[0].text.upper() if tokens else ""
    if first in ("SET", "RESET"):
        return _setting_context(first, tokens[1:], word, quoted)
    options = _with_options(tokens, word, quoted)
    if options is not None:
        return options
    if quoted:
        return _NONE
    if not tokens:
        return CompletionContext("statement_start", word)
    if len(tokens) == 1 and first in SECOND_WORDS:
        return CompletionContext("second_word", word, key=first)
    if _expects_table(tokens):
        return CompletionContext("table", word, tables=tables)
    return CompletionContext("expression", word, tables=tables)


def _rest_of_statement(after: str) -> list[Token]:
    """Tokens after the cursor up to the end of the statement (none if unreadable)."""
    tokens = _tokens(after) or []
    for index, token in enumerate(tokens):
        if token.token_type == TokenType.SEMICOLON:
            return tokens[:index]
    return tokens


def _is_name(token: Token) -> bool:
    return token.token_type in (TokenType.VAR, TokenType.IDENTIFIER)


def _in_from_list(tokens: list[Token]) -> list[bool]:
    """For each token: is it inside a FROM clause's list of tables (after FROM, before the
    clause that ends it)?"""
    flags, in_from = [], False
    for token in tokens:
        word = token.text.upper() if token.token_type != TokenType.IDENTIFIER else ""
        if word == "FROM":
            in_from = True
        elif word in _FROM_ENDS:
            in_from = False
        flags.append(in_from)
    return flags


def _table_expected_after(tokens: list[Token], index: int, in_from: list[bool]) -> bool:
    """Is a table name expected right after ``tokens[index]``?"""
    token = tokens[index]
    if token.token_type == TokenType.COMMA:
        return in_from[index]
    return token.token_type != TokenType.IDENTIFIER and token.text.upper() in _TABLE_BEFORE


def _tables_in_scope(tokens: list[Token]) -> tuple[tuple[str, str], ...]:
    """``(alias or name, table)`` for each table named after FROM, JOIN, INTO, TABLE or a
    comma of a FROM list; an alias follows the name, with or without AS."""
    found: list[tuple[str, str]] = []
    in_from = _in_from_list(tokens)
    for index in range(1, len(tokens)):
        token = tokens[index]
        if not _is_name(token) or not _table_expected_after(tokens, index - 1, in_from):
            continue
        found.append((token.text, token.text))
        following = tokens[index + 1:index + 3]
        alias = None
        if following and following[0].text.upper() == "AS" and len(following) > 1 \
                and _is_name(following[1]):
            alias = following[1].text
        elif following and _is_name(following[0]):
            alias = following[0].text
        if alias is not None and alias != token.text:
            found.append((alias, token.text))
    return tuple(found)


def _expects_table(tokens: list[Token]) -> bool:
    return _table_expected_after(tokens, len(tokens) - 1, _in_from_list(tokens))


def _setting_context(first: str, tokens: list[Token], word: str,
                     quoted: bool) -> CompletionContext:
    equals = [i for i, t in enumerate(tokens) if t.token_type == TokenType.EQ]
    if not equals:
        if tokens and not quoted:  # the key is written: '=' comes next
            return _NONE
        return CompletionContext("setting_key", word, quoted=quoted)
    if first == "RESET" or len(tokens) > equals[0] + 1:
        return _NONE
    key = "".join(t.text for t in tokens[:equals[0]])
    return CompletionContext("setting_value", word, quoted=quoted, key=key)


def _with_options(tokens: list[Token], word: str, quoted: bool) -> CompletionContext | None:
    """The option context when the cursor is directly inside ``WITH (``; else None."""
    openers: list[int] = []
    for index, token in enumerate(tokens):
        if token.token_type == TokenType.L_PAREN:
            openers.append(index)
        elif token.token_type == TokenType.R_PAREN and openers:
            openers.pop()
    if not openers or openers[-1] == 0:
        return None
    opener = openers[-1]
    if tokens[opener - 1].text.upper() != "WITH":
        return None
    columns = _created_columns(tokens[:opener - 1])
    inside = tokens[opener + 1:]
    options: dict[str, str] = {}
    for index in range(len(inside) - 2):
        key, equals, value = inside[index:index + 3]
        if equals.token_type == TokenType.EQ and key.token_type == TokenType.STRING \
                and value.token_type == TokenType.STRING:
            options[key.text] = value.text
    last = inside[-1] if inside else None
    if last is None or last.token_type == TokenType.COMMA:
        return CompletionContext("option_key", word, quoted=quoted, options=options,
                                 columns=columns)
    if last.token_type == TokenType.EQ and len(inside) > 1:
        return CompletionContext("option_value", word, quoted=quoted, key=inside[-2].text,
                                 options=options, columns=columns)
    return CompletionContext("none")


#: what starts a table constraint or a watermark in a CREATE TABLE's list, not a column
_NOT_COLUMNS = frozenset({"PRIMARY", "WATERMARK", "CONSTRAINT", "UNIQUE", "PERIOD", "LIKE"})


def _created_columns(tokens: list[Token]) -> tuple[str, ...]:
    """The physical columns of ``CREATE TABLE name (...)`` in ``tokens`` (the statement up
    to its WITH): each item of the list whose first token is a name and which is neither
    a constraint, a watermark, a computed column (``c AS expr``) nor a metadata column."""
    words = [t.text.upper() for t in tokens[:4]]
    if words[:1] != ["CREATE"] or "TABLE" not in words:
        return ()
    opener = next((i for i, t in enumerate(tokens) if t.token_type == TokenType.L_PAREN), None)
    if opener is None:
        return ()
    items: list[list[Token]] = [[]]
    depth = 0
    for token in tokens[opener + 1:]:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            if depth == 0:
                break
            depth -= 1
        elif token.token_type == TokenType.COMMA and depth == 0:
            items.append([])
            continue
        items[-1].append(token)
    columns = []
    for item in items:
        if len(item) < 2 or not _is_name(item[0]) or item[0].text.upper() in _NOT_COLUMNS \
                and item[0].token_type != TokenType.IDENTIFIER:
            continue
        rest = {t.text.upper() for t in item[1:]}
        if item[1].text.upper() == "AS" or "METADATA" in rest:
            continue
        columns.append(item[0].text)
    return tuple(columns)
