"""CREATE TABLE checks of kafka and upsert-kafka tables beyond option syntax: which topics,
where columns live (``layout``), and that the formats can serve their columns -- so a table
the connector cannot read or write fails its DDL, not its first query."""

from __future__ import annotations

from flowsql.errors import CatalogError
from flowsql.planner.catalog import TableEntry
from flowsql.runtime.connectors.kafka.layout import table_layout


def check_kafka_table(table: TableEntry) -> None:
    from flowsql.runtime.connectors.kafka.formats import payload_format

    options = table.options
    topics = [o for o in ("topic", "topic-pattern") if options.get(o)]
    if len(topics) != 1:
        raise CatalogError(f"table '{table.name}': set exactly one of 'topic' and "
                           "'topic-pattern'")
    layout = table_layout(table.name, table.schema, options, table.metadata,
                          table.primary_key)
    value_prefix = "value." if "value.format" in options else ""
    payload_format(layout.value_format, layout.value_schema, options, value_prefix)
    if layout.key_schema is not None and layout.key_format is not None:
        payload_format(layout.key_format, layout.key_schema, options, "key.")
    if table.connector == "upsert-kafka" and layout.value_format == "debezium-json":
        raise CatalogError(f"table '{table.name}': upsert-kafka values cannot be "
                           "debezium-json (the table is already a changelog)")
