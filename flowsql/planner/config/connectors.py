"""Every connector, declared once: its options, roles, boundedness, changelog and formats.

``CREATE TABLE ... WITH (...)`` is checked here (:func:`validate_table_options`): an
unknown connector, format or option key is an OptionError naming the closest declared one,
and every value is parsed, so a bad table fails its DDL, not its first query. The planner
asks these declarations what a table can do (:meth:`Connector.is_bounded`,
``source``/``sink``, ``sink_accepts_updates``) instead of comparing connector names; the
runtime maps a connector name to its implementation in one dict
(``flowsql.runtime.connectors.implementations``).

Option keys and defaults are Flink's where Flink has the option. Per-column options are
written ``fields.<column>.<name>`` (datagen) and declared once as ``<name>``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flowsql.errors import CatalogError, ConfigError, OptionError
from flowsql.planner.config.suggest import did_you_mean
from flowsql.planner.config.values import (
    BOOLEAN,
    CHARACTER,
    DURATION,
    INTEGER,
    MEMORY_SIZE,
    NUMBER,
    STRING,
    Option,
)

#: the option naming a table's connector, and the connector of a table without one
CONNECTOR_OPTION = Option("connector", STRING, "filesystem",
                          "The connector the table reads from and writes to.")
COLUMN_OPTION_PREFIX = "fields."


@dataclass(frozen=True)
class Format:
    """A file format of the filesystem connector and its options (keys ``<name>.*``).
    ``describes_columns``: the files carry their schema, so the DDL may omit columns."""

    name: str
    description: str
    options: tuple[Option, ...] = ()
    describes_columns: bool = False


@dataclass(frozen=True)
class Connector:
    """One connector.

    ``source``/``sink``: whether tables of it can be read / written (INSERT INTO).
    Boundedness of a source: unbounded when option ``unbounded_with`` is set (a watched
    directory); with ``bounded_by_row_count``, bounded exactly when its row count is known.
    ``sink_accepts_updates``: whether it can store an updating changelog (else it accepts
    append-only input). ``needs_columns``: the DDL must list the columns (unless the
    table's format describes them). ``format_option`` names the option choosing one of
    ``formats``.
    """

    name: str
    description: str
    source: bool
    sink: bool
    options: tuple[Option, ...] = ()
    column_options: tuple[Option, ...] = ()
    formats: tuple[Format, ...] = ()
    format_option: str | None = None
    unbounded_with: str | None = None
    bounded_by_row_count: bool = False
    sink_accepts_updates: bool = False
    needs_columns: bool = True

    def option(self, key: str) -> Option:
        """The declaration of ``key`` (a connector or format option); KeyError if none."""
        for option in self._all_options():
            if option.key == key:
                return option
        raise KeyError(key)

    def value(self, options: Mapping[str, str], key: str) -> Any:
        """The typed value of option ``key`` in a table's ``options`` (else its default)."""
        return self.option(key).read(options)

    def column_value(self, options: Mapping[str, str], column: str, name: str) -> Any:
        """The typed value of ``fields.<column>.<name>`` (else its default)."""
        return self.column_option(column, name).read(options)

    def format(self, options: Mapping[str, str]) -> Format | None:
        """The table's format (None for a connector without formats)."""
        if self.format_option is None:
            return None
        name = self.value(options, self.format_option)
        return next(f for f in self.formats if f.name == name)

    def is_bounded(self, options: Mapping[str, str], row_count: int | None) -> bool:
        """Whether a source table of this connector ends."""
        if self.unbounded_with is not None and self.unbounded_with in options:
            return False
        if self.bounded_by_row_count:
            return row_count is not None
        return True

    def changelog(self) -> str:
        """What the sink stores, in words: for error messages and the docs."""
        return "updating" if self.sink_accepts_updates else "append-only"

    def _all_options(self) -> tuple[Option, ...]:
        return (*self.options, *(o for f in self.formats for o in f.options))

    def column_option(self, column: str, name: str) -> Option:
        """The declaration of per-column option ``name``, keyed ``fields.<column>.<name>``
        (StopIteration if ``name`` is not declared)."""
        declared = next(o for o in self.column_options if o.key == name)
        return dataclasses.replace(declared, key=f"{COLUMN_OPTION_PREFIX}{column}.{name}")


_CSV = Format("csv", "Comma-separated values; one record per line.", (
    Option("csv.field-delimiter", CHARACTER, ",", "The field separator ('\\t' for a tab)."),
    Option("csv.ignore-first-line", BOOLEAN, "false",
           "Whether the first line of every file is a header (skipped when reading, "
           "written by the sink)."),
    Option("csv.null-literal", STRING, None,
           "The text of NULL in every column (unset: an empty field of a non-string column "
           "is NULL)."),
    Option("csv.ignore-parse-errors", BOOLEAN, "false",
           "Whether a record that does not parse is skipped (and counted) instead of "
           "failing the query."),
))
_JSON = Format("json", "Newline-delimited JSON objects, one key per column.", (
    Option("json.ignore-parse-errors", BOOLEAN, "false",
           "Whether a record that does not parse is skipped (and counted) instead of "
           "failing the query."),
))
_PARQUET = Format("parquet", "Apache Parquet files; the schema is read from the first file.",
                  describes_columns=True)

FILESYSTEM = Connector(
    "filesystem",
    "Files in a directory (or one file): read as a bounded table, or watched for new files "
    "with 'source.monitor-interval'; written as new part files.",
    source=True, sink=True,
    options=(
        Option("path", STRING, None, "A file or a directory of files.", required=True),
        Option("format", STRING, "parquet", "The file format.",
               allowed=("parquet", "csv", "json")),
        Option("source.monitor-interval", DURATION, None,
               "Watch the directory: list it again every interval and read each new file "
               "once (the table becomes unbounded).", minimum=1),
        Option("sink.rolling-policy.file-size", MEMORY_SIZE, "128mb",
               "Size at which the sink closes a part file and starts the next.", minimum=1),
        Option("format.ignore-parse-errors", BOOLEAN, "false",
               "'<format>.ignore-parse-errors' for whichever format the table has."),
    ),
    formats=(_PARQUET, _CSV, _JSON), format_option="format",
    unbounded_with="source.monitor-interval", needs_columns=False)

DATAGEN = Connector(
    "datagen",
    "Generated rows, reproducible from a seed: bounded by 'number-of-rows' or a sequence "
    "column, else unbounded.",
    source=True, sink=False,
    options=(
        Option("number-of-rows", INTEGER, None, "Rows to generate (unset: unbounded unless "
               "a column is a sequence)."),
        Option("rows-per-second", INTEGER, "10000",
               "Throttle of the whole source (0 or negative: unthrottled)."),
        Option("seed", INTEGER, "0", "Seed of the random values."),
    ),
    column_options=(
        Option("kind", STRING, "random", "How the column is generated.",
               allowed=("random", "sequence")),
        Option("start", INTEGER, None, "First value of a sequence column."),
        Option("end", INTEGER, None, "Last value of a sequence column (the source ends "
               "after it)."),
        Option("min", NUMBER, None, "Smallest random value (temporal columns: epoch ms)."),
        Option("max", NUMBER, None, "Largest random value (temporal columns: epoch ms)."),
        Option("length", INTEGER, "100", "Length of random strings.", minimum=0),
    ),
    bounded_by_row_count=True)

PRINT = Connector(
    "print",
    "Writes every change as a line on standard output, as Flink prints rows "
    "(+I[1, a]).",
    source=False, sink=True,
    options=(
        Option("print-identifier", STRING, None, "Text that starts every line."),
        Option("standard-error", BOOLEAN, "false", "Print to standard error instead."),
    ),
    sink_accepts_updates=True)

BLACKHOLE = Connector(
    "blackhole", "Discards every row: measures a query without the cost of output.",
    source=False, sink=True, sink_accepts_updates=True)

CONNECTORS: dict[str, Connector] = {c.name: c for c in (FILESYSTEM, DATAGEN, PRINT, BLACKHOLE)}


def connector_of(options: Mapping[str, str]) -> Connector:
    """The declared connector of a table's options (``filesystem`` when unset)."""
    return find_connector(options.get(CONNECTOR_OPTION.key) or CONNECTOR_OPTION.default or "")


def find_connector(name: str) -> Connector:
    """The connector called ``name`` (case-insensitive); OptionError naming the closest
    declared connector when there is none."""
    found = CONNECTORS.get(name.lower())
    if found is None:
        raise OptionError(f"unknown connector '{name}'{did_you_mean(name, CONNECTORS)} "
                          f"(available: {', '.join(CONNECTORS)})")
    return found


def validate_table_options(table: str, options: Mapping[str, str],
                           columns: Sequence[str] | None) -> dict[str, str]:
    """``options`` of table ``table`` (columns ``columns``; None when the DDL lists none)
    checked against their connector's declaration: the options with the connector and
    the lower-cased choice words (``connector``, ``format``, ...) written out. Raises
    OptionError (unknown connector, format or key; invalid or missing value) or
    CatalogError (a connector that needs a column list got none)."""
    try:
        connector = connector_of(options)
    except OptionError as error:
        raise OptionError(f"table '{table}': {error}") from None
    checked = {CONNECTOR_OPTION.key: connector.name}
    declared = {o.key: o for o in connector.options}
    fmt = _checked_format(table, connector, options)
    if fmt is not None:
        declared.update({o.key: o for o in fmt.options})
    column_names = tuple(columns or ())
    for key, value in options.items():
        if key == CONNECTOR_OPTION.key:
            continue
        option = declared.get(key) or _column_option(table, connector, key, column_names)
        if option is None:
            raise OptionError(_unknown_option(table, connector, key, declared, fmt))
        try:
            parsed = option.parse(value)
        except ConfigError as error:
            raise OptionError(f"table '{table}': {error}") from None
        checked[key] = parsed if option.allowed else value
    missing = [o.key for o in connector.options if o.required and o.key not in options]
    if missing:
        raise OptionError(f"table '{table}': the {connector.name} connector needs "
                          f"'{missing[0]}'")
    if columns is None and connector.needs_columns:
        raise CatalogError(f"table '{table}': the {connector.name} connector needs a column "
                           "list")
    return checked


def _checked_format(table: str, connector: Connector, options: Mapping[str, str]
                    ) -> Format | None:
    if connector.format_option is None:
        return None
    try:
        return connector.format(options)
    except ConfigError as error:
        raise OptionError(f"table '{table}': {error}") from None


def _column_option(table: str, connector: Connector, key: str,
                   columns: Sequence[str]) -> Option | None:
    """The declaration of ``fields.<column>.<name>``; OptionError when the column does not
    exist (names match exactly, as the connector reads them), None when ``key`` has no
    such shape or ``name`` is not declared."""
    if not connector.column_options or not key.startswith(COLUMN_OPTION_PREFIX):
        return None
    column, _, name = key[len(COLUMN_OPTION_PREFIX):].rpartition(".")
    if not any(o.key == name for o in connector.column_options):
        return None
    if column not in columns:
        raise OptionError(f"table '{table}': {connector.name} option '{key}' names no column "
                          f"of the table{did_you_mean(column, columns)}")
    return connector.column_option(column, name)


def _unknown_option(table: str, connector: Connector, key: str,
                    declared: Mapping[str, Option], fmt: Format | None) -> str:
    candidates = list(declared)
    if connector.column_options and key.startswith(COLUMN_OPTION_PREFIX):
        column = key[len(COLUMN_OPTION_PREFIX):].rpartition(".")[0] or "<column>"
        candidates += [f"{COLUMN_OPTION_PREFIX}{column}.{o.key}"
                       for o in connector.column_options]
    text = (f"table '{table}': unknown option '{key}' for the {connector.name} connector"
            f"{did_you_mean(key, candidates)}")
    other = next((f for f in connector.formats if f is not fmt
                  and any(o.key == key for o in f.options)), None)
    if other is not None and fmt is not None:
        text += f"; '{key}' is an option of format {other.name}, the table's is {fmt.name}"
    return text
