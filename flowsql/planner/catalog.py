"""Catalog entries: tables (a connector plus options and a schema) and views (SQL text).

The catalog is a plain in-memory registry owned by a session. Entries are immutable and
hold only data (names, Arrow types, option strings, SQL text), never bound expressions or
code, so they can be written out and read back as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from flowsql.errors import CatalogError
from flowsql.planner.config.connectors import CONNECTOR_OPTION, FILESYSTEM
from flowsql.planner.statistics import ColumnStatistics, TableStatistics
from flowsql.planner.udf_registry import FunctionRegistry

__all__ = ["Catalog", "ColumnStatistics", "ComputedColumn", "Entry", "MetadataColumn",
           "TableEntry", "TableStatistics", "ViewEntry", "WatermarkSpec"]


@dataclass(frozen=True)
class WatermarkSpec:
    """``WATERMARK FOR column AS column - INTERVAL delay``: ``column`` is the table's event-time
    (rowtime) attribute, ``delay_ms`` the bounded out-of-orderness in milliseconds."""

    column: str
    delay_ms: int


@dataclass(frozen=True)
class ComputedColumn:
    """``name AS expression`` in CREATE TABLE (Flink's computed column): a column computed
    from the table's physical columns each time a row is read, never stored.

    ``expression`` is the SQL text (flowsql dialect), bound anew against the physical columns
    wherever the table is read, as a view's text is -- the entry stays data. ``position`` is
    the column's index among all declared columns, physical and computed: queries see the
    columns in declaration order. ``PROCTIME()`` as the whole expression makes the column a
    processing-time attribute (the wall-clock time when the row passes the scan).
    """

    name: str
    expression: str
    position: int

    @property
    def is_proctime(self) -> bool:
        return self.expression.replace(" ", "").upper() == "PROCTIME()"


@dataclass(frozen=True)
class MetadataColumn:
    """``name TYPE METADATA [FROM 'key'] [VIRTUAL]`` (Flink): a column the connector fills
    from what it knows about a record (a Kafka record's timestamp, partition, offset, ...)
    rather than from the record's payload. The column is in the table's ``schema`` like a
    physical one; a VIRTUAL column is read-only: INSERT INTO does not write it."""

    name: str
    key: str
    virtual: bool


@dataclass(frozen=True)
class TableEntry:
    """A table backed by a connector. ``options`` are the DDL's WITH properties;
    ``watermark`` is the DDL's WATERMARK clause (None: the table has no event time); its
    column may be a physical or a computed one.

    ``schema`` holds the *physical* columns only: what the connector reads and what
    INSERT INTO writes. ``computed`` are the computed columns (see :class:`ComputedColumn`),
    which readers add above the scan."""

    name: str
    schema: pa.Schema
    options: dict[str, str] = field(default_factory=dict)
    statistics: TableStatistics = field(default_factory=TableStatistics)
    watermark: WatermarkSpec | None = None
    computed: tuple[ComputedColumn, ...] = ()
    #: columns of ``PRIMARY KEY (...) NOT ENFORCED`` (upsert-kafka's key); () when none
    primary_key: tuple[str, ...] = ()
    metadata: tuple[MetadataColumn, ...] = ()

    @property
    def writable_schema(self) -> pa.Schema:
        """The columns INSERT INTO writes: ``schema`` without VIRTUAL metadata columns."""
        virtual = {m.name for m in self.metadata if m.virtual}
        if not virtual:
            return self.schema
        return pa.schema([f for f in self.schema if f.name not in virtual])

    @property
    def payload_schema(self) -> pa.Schema:
        """The columns a record's payload carries: ``schema`` without metadata columns."""
        names = {m.name for m in self.metadata}
        return pa.schema([f for f in self.schema if f.name not in names])

    @property
    def connector(self) -> str:
        """The connector's name (the declared default when the options name none)."""
        return self.options.get(CONNECTOR_OPTION.key) or str(CONNECTOR_OPTION.default)

    @property
    def format(self) -> str:
        """The file format of a filesystem table (the declared default when unset)."""
        return str(FILESYSTEM.value(self.options, "format"))

    @property
    def path(self) -> str | None:
        return self.options.get("path")


@dataclass(frozen=True)
class ViewEntry:
    """A view is its query text, bound anew each time it is used."""

    name: str
    sql: str
    column_names: tuple[str, ...] = ()


Entry = TableEntry | ViewEntry


class Catalog:
    """Case-insensitive registry of tables and views; ``functions`` holds the user-defined
    functions (a namespace of its own: a function and a table may share a name)."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self.functions = FunctionRegistry()

    def get(self, name: str) -> Entry | None:
        return self._entries.get(name.lower())

    def names(self) -> list[str]:
        return sorted(e.name for e in self._entries.values())

    def add(self, entry: Entry, replace: bool = False, if_not_exists: bool = False) -> None:
        key = entry.name.lower()
        if key in self._entries and not replace:
            if if_not_exists:
                return
            kind = "view" if isinstance(self._entries[key], ViewEntry) else "table"
            raise CatalogError(f"{kind} '{entry.name}' already exists")
        self._entries[key] = entry

    def drop(self, name: str, kind: type, if_exists: bool = False) -> None:
        entry = self._entries.get(name.lower())
        label = "view" if kind is ViewEntry else "table"
        if entry is None:
            if if_exists:
                return
            raise CatalogError(f"{label} '{name}' does not exist")
        if not isinstance(entry, kind):
            raise CatalogError(f"'{name}' is not a {label}")
        del self._entries[name.lower()]
