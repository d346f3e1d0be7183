"""Payload formats of the Kafka connectors: message bytes <-> rows, with no broker.

``payload_format(name, schema, options, prefix)`` makes the format a table names in
``format`` (prefix ''), ``key.format`` ('key.') or ``value.format`` ('value.'); its
options are read as Flink spells them, ``<prefix><format>.<option>`` (for example
``key.json.ignore-parse-errors``). Formats: ``json``, ``csv``, ``raw``, ``debezium-json``
(a changelog: decoding yields row kinds) and ``avro``; see each module for its rules.

Decoding is vectorized for the text formats: one Arrow read over all the payloads of a
poll, with a search for the bad ones only when that read fails (``decoding``). A bad
payload is a :class:`DataError` whose message starts with ``where(i)`` of that payload, or
is skipped and counted where the format ignores parse errors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pyarrow as pa

from flowsql.errors import CatalogError
from flowsql.runtime.connectors.kafka.formats.avro_format import AvroFormat, avro_schema
from flowsql.runtime.connectors.kafka.formats.csv_format import CsvFormat
from flowsql.runtime.connectors.kafka.formats.debezium_json import DebeziumJsonFormat
from flowsql.runtime.connectors.kafka.formats.decoding import Decoded, PayloadFormat
from flowsql.runtime.connectors.kafka.formats.json_format import JsonFormat
from flowsql.runtime.connectors.kafka.formats.options import FormatOptions
from flowsql.runtime.connectors.kafka.formats.raw_format import RawFormat

__all__ = ["FORMATS", "Decoded", "PayloadFormat", "avro_schema", "payload_format"]

#: format name -> constructor from (schema, the format's options)
FORMATS: dict[str, Callable[[pa.Schema, FormatOptions], PayloadFormat]] = {
    "json": JsonFormat,
    "csv": CsvFormat,
    "raw": RawFormat,
    "debezium-json": DebeziumJsonFormat,
    "avro": AvroFormat,
}


def payload_format(name: str, schema: pa.Schema, options: Mapping[str, str],
                   prefix: str = "") -> PayloadFormat:
    """The format ``name`` for rows of ``schema``; its options are read as
    ``f"{prefix}{name}.<option>"`` from ``options``. An unknown format, an invalid option
    or a column the format cannot carry is a :class:`CatalogError`."""
    make = FORMATS.get(name.strip().lower())
    if make is None:
        raise CatalogError(f"unknown format '{name}' (supported: {', '.join(sorted(FORMATS))})")
    return make(schema, FormatOptions(options, prefix, name.strip().lower()))
