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

from flowsql.errors import CatalogError, ConfigError, OptionError
from flowsql.planner.config.connector_model import (
    COLUMN_OPTION_PREFIX,
    CONNECTOR_OPTION,
    Connector,
    Format,
)
from flowsql.planner.config.kafka import KAFKA, UPSERT_KAFKA
from flowsql.planner.config.nexmark import NEXMARK
from flowsql.planner.config.socket import SOCKET
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

CONNECTORS: dict[str, Connector] = {
    c.name: c for c in (FILESYSTEM, DATAGEN, PRINT, BLACKHOLE, KAFKA, UPSERT_KAFKA,
                         SOCKET, NEXMARK)}


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
    fmt: Format | None = None
    if connector.key_value_formats:
        declared.update(_key_value_format_options(table, connector, options))
    else:
        fmt = _checked_format(table, connector, options)
        if fmt is not None:
            declared.update({o.key: o for o in fmt.options})
    column_names = tuple(columns or ())
    for key, value in options.items():
        if key == CONNECTOR_OPTION.key:
            continue
        if any(key.startswith(prefix) and key not in declared
               for prefix, _ in connector.option_prefixes):
            checked[key] = value  # passed through to the client as it is
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


def _key_value_format_options(table: str, connector: Connector,
                              options: Mapping[str, str]) -> dict[str, Option]:
    """The format options a table with key and value formats may set: ``<fmt>.<option>``
    for the value format chosen with ``format``, ``value.<fmt>.<option>`` with
    ``value.format``, ``key.<fmt>.<option>`` for ``key.format`` (Flink's spelling)."""
    by_name = {f.name: f for f in connector.formats}
    declared: dict[str, Option] = {}
    value_keys = [k for k in ("format", "value.format") if k in options]
    if len(value_keys) > 1:
        raise OptionError(f"table '{table}': set either 'format' or 'value.format', not both")
    if not value_keys and not connector.needs_primary_key:
        raise OptionError(f"table '{table}': the {connector.name} connector needs 'format' "
                          "(or 'value.format')")
    for key in (*value_keys, "key.format"):
        if key not in options:
            continue
        try:
            name = connector.option(key).parse(options[key])
        except ConfigError as error:
            raise OptionError(f"table '{table}': {error}") from None
        prefix = "" if key == "format" else key.removesuffix("format")
        declared.update({f"{prefix}{o.key}": dataclasses.replace(o, key=f"{prefix}{o.key}")
                         for o in by_name[name].options})
    return declared


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
