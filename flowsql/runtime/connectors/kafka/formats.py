"""Payload encodings of Kafka records, reduced to what the sink's tests need: ``json`` (one
JSON object per row, one key per column) and ``raw`` (the bytes of the one column).

Temporary: the formats module proper replaces this file (same ``payload_format`` API)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from flowsql.errors import CatalogError


class PayloadFormat:
    def __init__(self, name: str, schema: pa.Schema, charset: str) -> None:
        self.name = name
        self.schema = schema
        self.charset = charset

    def encode(self, batch: pa.RecordBatch) -> list[bytes | None]:
        if self.name == "raw":
            column = batch.column(0)
            if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
                return column.to_pylist()  # type: ignore[no-any-return]
            return [None if v is None else v.encode(self.charset) for v in column.to_pylist()]
        return [json.dumps(row, default=_json_default).encode() for row in batch.to_pylist()]


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


def payload_format(name: str, schema: pa.Schema, options: dict[str, str],
                   prefix: str) -> PayloadFormat:
    if name not in ("json", "raw"):
        raise CatalogError(f"format '{name}' is not available yet")
    if name == "raw" and len(schema) != 1:
        raise CatalogError("the raw format needs exactly one column")
    return PayloadFormat(name, schema, options.get(f"{prefix}raw.charset", "utf-8"))
