"""What a connector is, as data: :class:`Connector` and :class:`Format`.

The declarations themselves live in ``connectors`` (filesystem, datagen, print, blackhole)
and ``kafka`` (kafka, upsert-kafka); ``connectors`` also holds the registry and the
validation of a table's options against its declaration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flowsql.planner.config.values import STRING, Option

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
class MetadataKey:
    """A metadata column a connector offers (``METADATA FROM '<name>'``): its SQL type as
    Flink documents it, and whether a sink writes it (else it must be VIRTUAL to be
    written to)."""

    name: str
    sql_type: str
    writable: bool
    description: str


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
    #: option key prefixes passed through as they are (``properties.`` of kafka), with
    #: what they are for
    option_prefixes: tuple[tuple[str, str], ...] = ()
    #: option whose value, unless ``unbounded``, makes the source bounded
    #: (``scan.bounded.mode`` of kafka)
    bounded_with: str | None = None
    #: the source always reads a changelog (upsert-kafka)
    updating_source: bool = False
    #: formats whose messages are changes (+I/-U/+U/-D), making the source updating
    changelog_formats: tuple[str, ...] = ()
    #: the table must declare PRIMARY KEY (...) NOT ENFORCED
    needs_primary_key: bool = False
    #: separate key and value formats (``key.format``, ``value.format``): format options
    #: are then written ``key.<format>.<option>`` / ``value.<format>.<option>``
    key_value_formats: bool = False
    #: metadata columns (``col TYPE METADATA [FROM 'key'] [VIRTUAL]``) the connector knows
    metadata: tuple[MetadataKey, ...] = ()
    #: the source generates watermarks per split (Kafka partition) and combines them;
    #: the planner hands it the WATERMARK instead of placing an assigner above it
    split_watermarks: bool = False
    #: the source never ends, whatever its options (socket)
    unbounded: bool = False

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
        if self.unbounded:
            return False
        if self.unbounded_with is not None and self.unbounded_with in options:
            return False
        if self.bounded_with is not None:
            return str(options.get(self.bounded_with, "unbounded")).lower() != "unbounded"
        if self.bounded_by_row_count:
            return row_count is not None
        return True

    def reads_changelog(self, options: Mapping[str, str]) -> bool:
        """Whether the source's rows are changes (+I/-U/+U/-D) rather than inserts."""
        if self.updating_source:
            return True
        chosen = {str(options.get(key, "")).lower() for key in ("format", "value.format")}
        return bool(chosen & set(self.changelog_formats))

    def metadata_key(self, name: str) -> MetadataKey | None:
        return next((m for m in self.metadata if m.name == name), None)

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
