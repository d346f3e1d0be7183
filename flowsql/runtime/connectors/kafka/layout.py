"""Where each column of a Kafka table lives in a record: the key, the value, or the metadata.

Flink's rules (``key.fields``, ``key.fields-prefix``, ``value.fields-include``):

* metadata columns (``METADATA FROM 'key'``) come from the record, never from a payload;
* the key columns are ``key.fields`` (kafka) or the PRIMARY KEY (upsert-kafka), in that
  order; the key format sees them under their names without ``key.fields-prefix``;
* the value holds every other payload column, and also the key columns unless
  ``value.fields-include`` = ``EXCEPT_KEY``; a prefix requires ``EXCEPT_KEY`` (the value
  would otherwise hold a column named as in the key).

:func:`table_layout` checks these when the table is created (CatalogError naming the
problem), so the source and the sinks can rely on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from flowsql.errors import CatalogError
from flowsql.planner.catalog import MetadataColumn
from flowsql.planner.config.connector_model import Connector
from flowsql.planner.config.connectors import find_connector


@dataclass(frozen=True)
class TableLayout:
    """Columns by place. ``key_schema`` has the names the key format sees (prefix
    removed), ``key_columns`` the table's names of the same columns."""

    schema: pa.Schema
    key_columns: tuple[str, ...]
    key_schema: pa.Schema | None
    key_format: str | None
    value_schema: pa.Schema
    value_format: str
    metadata: tuple[MetadataColumn, ...]

    def key_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The key columns of a batch of the table's columns, named as the key format
        sees them."""
        assert self.key_schema is not None
        return pa.RecordBatch.from_arrays([batch.column(c) for c in self.key_columns],
                                          schema=self.key_schema)

    def value_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays([batch.column(f.name) for f in self.value_schema],
                                          schema=self.value_schema)


def table_layout(table: str, schema: pa.Schema, options: dict[str, str],
                 metadata: tuple[MetadataColumn, ...] = (),
                 primary_key: tuple[str, ...] = ()) -> TableLayout:
    """The layout of a kafka or upsert-kafka table (see the module docstring)."""
    connector = find_connector(options["connector"])
    meta = {m.name for m in metadata}
    payload = [f for f in schema if f.name not in meta]
    names = {f.name.lower(): f.name for f in payload}
    if connector.needs_primary_key:
        keys = primary_key
    else:
        raw = options.get("key.fields")
        keys = tuple(k.strip() for k in raw.split(";") if k.strip()) if raw else ()
    for key in keys:
        if key.lower() not in names:
            raise CatalogError(f"table '{table}': key field '{key}' is not a payload column "
                               f"(columns: {', '.join(names.values())})")
    keys = tuple(names[k.lower()] for k in keys)
    key_format = options.get("key.format")
    if keys and key_format is None:
        raise CatalogError(f"table '{table}': key fields need 'key.format'")
    if key_format is not None and not keys:
        raise CatalogError(f"table '{table}': 'key.format' needs 'key.fields' (the columns "
                           "of the key)")
    prefix = options.get("key.fields-prefix") or ""
    include = str(_value(connector, options, "value.fields-include"))
    if prefix and include != "except_key":
        raise CatalogError(f"table '{table}': 'key.fields-prefix' needs "
                           "'value.fields-include' = 'EXCEPT_KEY'")
    for key in keys:
        if not key.startswith(prefix):
            raise CatalogError(f"table '{table}': key field '{key}' does not start with "
                               f"'key.fields-prefix' '{prefix}'")
    key_schema = None
    if keys:
        key_schema = pa.schema([pa.field(k[len(prefix):], schema.field(k).type,
                                         schema.field(k).nullable) for k in keys])
    value = [f for f in payload if include != "except_key" or f.name not in keys]
    value_format = options.get("value.format") or options.get("format")
    assert value_format is not None  # validate_table_options requires one
    return TableLayout(schema, keys, key_schema, key_format, pa.schema(value), value_format,
                       metadata)


def _value(connector: Connector, options: dict[str, str], key: str) -> object:
    return connector.value(options, key)
