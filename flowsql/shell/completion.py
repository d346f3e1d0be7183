"""Tab completion in the shell: what may be typed at the cursor, from the session itself.

:class:`SqlCompleter` asks :func:`~flowsql.shell.completion_context.completion_context`
where the cursor is, then offers the names that fit there:

* a statement's first keyword at the start of a statement, and the words that may follow
  it (``CREATE`` ``TABLE``/``VIEW``/``FUNCTION``, ``SHOW`` ``TABLES``/``JOBS``, ...;
  EXPLAIN's modes ``ANALYZE``, ``VERBOSE``, ``MEMO``, ``PYSPARK``, ``PLAN FOR``,
  ``(COSTS OFF)``, then the statement explained);
* table and view names of the session's catalog after FROM, JOIN, INTO, TABLE, DESCRIBE
  (and ``\\d``);
* columns of the statement's tables, functions (built-in and the session's own) and
  keywords inside an expression; only that table's columns after ``alias.``;
* setting keys (in key order) after SET / RESET, and after ``=`` the values the settings registry allows;
* inside ``WITH (...)``: the option keys of the connector that WITH names (``filesystem``
  when it names none) and of its format, minus those already written; once ``fields.``
  is typed, the connector's per-column options for each column of the ``CREATE TABLE``
  (datagen's ``fields.<column>.kind``, ...: six per column would drown the other keys
  in the menu before); after ``=`` the connectors, formats or allowed values;
* inside an unclosed quoted identifier (`` `ord``, ``"ord``): the table or column names
  that fit there, closed with the same quote.

Keys and values are SQL strings: a completion started without a quote inserts
``'key'``, one typed after an opening quote inserts the rest and the closing quote.
Keywords and functions follow the case of the typed prefix (lower case when it is lower
case, else upper case). Matching is by case-insensitive prefix. The completer never raises:
a catalog lookup that fails offers nothing rather than breaking the line being typed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

from flowsql.planner.catalog import TableEntry
from flowsql.planner.config.connector_model import (
    COLUMN_OPTION_PREFIX,
    CONNECTOR_OPTION,
    Connector,
)
from flowsql.planner.config.connectors import CONNECTORS
from flowsql.planner.config.settings import PREFIX_FAMILIES, SETTINGS, find_setting
from flowsql.planner.config.values import BOOLEAN, Option
from flowsql.shell.completion_context import (
    SECOND_WORDS,
    CompletionContext,
    completion_context,
)
from flowsql.shell.help import META_COMMANDS
from flowsql.sql.dialect import WINDOW_TVFS
from flowsql.sql.functions import AGGREGATES, SCALAR_ALIASES, WINDOW_ONLY

if TYPE_CHECKING:
    from flowsql.session import Session

__all__ = ["BUILTIN_FUNCTIONS", "EXPRESSION_KEYWORDS", "STATEMENT_KEYWORDS", "Candidate",
           "SqlCompleter", "candidates"]

#: what a statement starts with
STATEMENT_KEYWORDS = ("ANALYZE", "CREATE", "DESCRIBE", "DROP", "EXPLAIN", "INSERT", "RESET",
                      "SELECT", "SET", "SHOW", "STOP", "WITH")

#: keywords inside a statement
EXPRESSION_KEYWORDS = (
    "ALL", "AND", "AS", "ASC", "BETWEEN", "BY", "CASE", "CAST", "COMPUTE", "CROSS",
    "CURRENT_DATE", "CURRENT_TIMESTAMP", "DESC", "DESCRIPTOR", "DISTINCT", "ELSE", "END",
    "EXCEPT", "EXISTS", "EXTRACT", "FALSE", "FILTER", "FIRST", "FOLLOWING", "FOR", "FROM",
    "FULL", "FUNCTION", "GROUP", "HAVING", "IF", "IN", "INNER", "INTERSECT", "INTERVAL", "INTO",
    "IS", "JOIN", "LAST", "LEFT", "LIKE", "LIMIT", "NOT", "NULL", "NULLS", "OFFSET", "ON", "OR",
    "ORDER", "OUTER", "OVER", "PARTITION", "PRECEDING", "PRIMARY", "KEY", "RANGE", "REPLACE",
    "RIGHT", "ROWS", "SELECT", "STATISTICS", "TABLE", "TABLES", "THEN", "TRUE", "UNBOUNDED",
    "UNION", "USING", "VALUES", "VIEW", "WATERMARK", "WHEN", "WHERE", "WINDOW", "WITH",
    # types
    "BIGINT", "BOOLEAN", "DATE", "DECIMAL", "DOUBLE", "FLOAT", "INT", "INTEGER", "SMALLINT",
    "STRING", "TIMESTAMP", "TIMESTAMP_LTZ", "TINYINT", "VARCHAR",
)

#: functions the binder knows by name beyond the function tables (special forms)
_SPECIAL_FUNCTIONS = ("cast", "try_cast", "extract", "now", "localtimestamp", "pi",
                      "proctime", "timestampadd", "timestampdiff", "typeof", "year", "quarter",
                      "month", "week", "dayofyear", "dayofmonth", "dayofweek", "hour", "minute",
                      "second")

#: every built-in function name (lower case), scalar, aggregate and window
BUILTIN_FUNCTIONS: tuple[str, ...] = tuple(sorted({
    *SCALAR_ALIASES, *AGGREGATES, *WINDOW_ONLY, *_SPECIAL_FUNCTIONS,
    *(name.lower() for name in WINDOW_TVFS)}))


@dataclass(frozen=True)
class Candidate:
    """One completion: ``text`` replaces the typed word; ``display`` is what the menu
    shows (default ``text``), ``meta`` the note beside it."""

    text: str
    meta: str = ""
    display: str | None = None


def candidates(context: CompletionContext, session: Session) -> list[Candidate]:
    """The completions for ``context`` (filtered by its word), in the order shown."""
    offered = _offer(context, session)
    quote = context.identifier_quote
    if quote is not None:  # names only, closing the quoted identifier
        offered = (Candidate(c.text + quote, c.meta, display=c.display or c.text)
                   for c in offered if c.meta != "keyword" and not c.meta.endswith("function"))
    word = context.word.lower()
    seen: set[str] = set()
    out: list[Candidate] = []
    for candidate in offered:
        shown = (candidate.display or candidate.text).lower()
        if shown.startswith(word) and shown not in seen:
            seen.add(shown)
            out.append(candidate)
    return out


class SqlCompleter(Completer):
    """The prompt-toolkit completer of the shell over one session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        try:
            context = completion_context(document.text_before_cursor,
                                         document.text_after_cursor)
            found = candidates(context, self.session)
        except Exception:  # completion must never break the line being typed
            return
        start = -len(context.word)
        for candidate in found:
            yield Completion(candidate.text, start_position=start,
                             display=candidate.display, display_meta=candidate.meta or None)


# --- what each context offers ---------------------------------------------------------

def _offer(context: CompletionContext, session: Session) -> Iterator[Candidate]:
    kind = context.kind
    if kind == "statement_start":
        yield from _keywords(STATEMENT_KEYWORDS, context.word)
    elif kind == "second_word":
        yield from _keywords(SECOND_WORDS.get(context.key or "", ()), context.word)
    elif kind == "table":
        yield from _tables(session)
    elif kind == "qualified_column":
        table = dict((alias.lower(), name) for alias, name in context.tables).get(
            (context.qualifier or "").lower(), context.qualifier)
        yield from _columns(session, [table] if table else [])
    elif kind == "expression":
        yield from _columns(session, [name for _, name in context.tables])
        if context.identifier_quote is not None:
            return
        yield from _functions(session, context.word)
        yield from _keywords(EXPRESSION_KEYWORDS, context.word)
    elif kind == "setting_key":
        for declared in sorted(SETTINGS, key=lambda o: o.key):
            yield _quoted(declared.key, context.quoted, declared.kind.name)
        for family in PREFIX_FAMILIES:
            yield _quoted(family.prefix, context.quoted, "prefix", close=False)
    elif kind == "setting_value":
        option = find_setting(context.key or "")
        if option is not None:
            for value in _values(option):
                yield _quoted(value, context.quoted, "")
    elif kind == "option_key":
        yield from _option_keys(context)
    elif kind == "option_value":
        yield from _option_values(context)
    elif kind == "meta_command":
        for command, what in META_COMMANDS:
            if " " not in command:
                yield Candidate(command, what)


def _cased(word: str, typed: str) -> str:
    """A keyword or function in the case of what was typed (upper unless lower case)."""
    return word.lower() if typed and typed == typed.lower() else word.upper()


def _keywords(words: Iterable[str], typed: str) -> Iterator[Candidate]:
    for word in words:
        yield Candidate(_cased(word, typed), "keyword")


def _functions(session: Session, typed: str) -> Iterator[Candidate]:
    for function in session.catalog.functions.functions():
        yield Candidate(function.name, f"{function.kind} function")
    for name in BUILTIN_FUNCTIONS:
        yield Candidate(_cased(name, typed), "function")


def _tables(session: Session) -> Iterator[Candidate]:
    for name in session.catalog.names():
        entry = session.catalog.get(name)
        yield Candidate(name, "table" if isinstance(entry, TableEntry) else "view")


def _columns(session: Session, tables: list[str]) -> Iterator[Candidate]:
    for table in tables:
        for column, sql_type in _table_columns(session, table):
            yield Candidate(column, sql_type)


def _table_columns(session: Session, table: str) -> list[tuple[str, str]]:
    """``(column, SQL type)`` of a table or view, as DESCRIBE shows them; none for a name
    that is not in the catalog or a view that does not bind."""
    entry = session.catalog.get(table)
    if entry is None:
        return []
    try:
        described = session.sql(f"DESCRIBE `{entry.name}`").table
    except Exception:  # a view over a dropped table: nothing to offer
        return []
    if described is None:
        return []
    return list(zip(described.column("name").to_pylist(),
                    described.column("type").to_pylist(), strict=True))


def _values(option: Option) -> tuple[str, ...]:
    if option.allowed:
        return option.allowed
    if option.kind is BOOLEAN:
        return ("true", "false")
    return ()


def _quoted(value: str, quoted: bool, meta: str, close: bool = True) -> Candidate:
    """A SQL string's completion: the rest and the closing quote after an opening quote
    the user typed, else the whole quoted string (``close=False`` leaves it open, for a
    key prefix the user goes on typing)."""
    ending = "'" if close else ""
    text = f"{value}{ending}" if quoted else f"'{value}{ending}"
    return Candidate(text, meta, display=value)


def _connector(options: dict[str, str]) -> Connector | None:
    return CONNECTORS.get((options.get(CONNECTOR_OPTION.key)
                           or CONNECTOR_OPTION.default or "").lower())


def _declared_options(options: dict[str, str], columns: Iterable[str] = ()) -> list[Option]:
    """The option keys a table with ``options`` may set: its connector's, its connector's
    per-column options for each of ``columns`` (``fields.<column>.<option>``), and those of
    the format(s) its options choose (``<key|value>.<format>.<option>`` for key/value
    formats)."""
    declared = [CONNECTOR_OPTION]
    connector = _connector(options)
    if connector is None:
        return declared
    declared.extend(connector.options)
    declared.extend(connector.column_option(column, option.key)
                    for column in columns for option in connector.column_options)
    formats = {f.name: f for f in connector.formats}
    if connector.key_value_formats:
        for key in ("format", "value.format", "key.format"):
            chosen = formats.get(options.get(key, "").lower())
            if chosen is not None:
                prefix = key.removesuffix("format")
                declared.extend(Option(f"{prefix}{o.key}", o.kind, o.default, o.description,
                                       allowed=o.allowed) for o in chosen.options)
    elif connector.format_option is not None:
        name = options.get(connector.format_option) or \
            connector.option(connector.format_option).default or ""
        chosen = formats.get(name.lower())
        if chosen is not None:
            declared.extend(chosen.options)
    return declared


def _option_keys(context: CompletionContext) -> Iterator[Candidate]:
    written = {key.lower() for key in context.options}
    per_column = context.word.lower().startswith(COLUMN_OPTION_PREFIX)
    for option in _declared_options(context.options, context.columns if per_column else ()):
        if option.key not in written:
            yield _quoted(option.key, context.quoted, option.kind.name)
    connector = _connector(context.options)
    for prefix, _ in connector.option_prefixes if connector is not None else ():
        yield _quoted(prefix, context.quoted, "prefix", close=False)


def _option_values(context: CompletionContext) -> Iterator[Candidate]:
    key = (context.key or "").lower()
    if key == CONNECTOR_OPTION.key:
        for name in CONNECTORS:
            yield _quoted(name, context.quoted, "connector")
        return
    for option in _declared_options(context.options, context.columns):
        if option.key.lower() == key:
            for value in _values(option):
                yield _quoted(value, context.quoted, "")
