"""Polled Kafka records -> one Arrow batch of the scanned columns.

A poll returns many records; they are decoded together: the value payloads in one call of
the value format (``formats``: one pyarrow parse for json and csv), the key payloads in one
call of the key format, metadata columns from the records' fields. The only per-record
Python is reading each record's fields out of the client's objects.

For a changelog the batch ends with the row kinds (``runtime.changelog``): debezium-json
values say the kind of each row; an upsert topic (upsert-kafka) is turned into changes by
``UpsertChangelog`` first. Each output row knows the record it came from (for metadata
columns, whose values repeat for the two rows of an update).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.catalog import TableEntry
from flowsql.runtime.changelog import with_row_kinds
from flowsql.runtime.connectors.kafka.formats import PayloadFormat, payload_format
from flowsql.runtime.connectors.kafka.layout import TableLayout, table_layout
from flowsql.runtime.connectors.kafka.upsert_changelog import UpsertChangelog

_TIMESTAMP_TYPES = {0: "NoTimestampType", 1: "CreateTime", 2: "LogAppendTime"}


@dataclass(frozen=True)
class DecodedRecords:
    """``batch``: the scanned columns (and row kinds for a changelog); ``records``: per
    row, the index of its record in the poll; ``skipped``: records ignored as unparsable."""

    batch: pa.RecordBatch
    records: np.ndarray
    skipped: int


class RecordDecoder:
    """Decodes polls of a table's records into batches of ``columns`` (table column names,
    in output order, with their Arrow types)."""

    def __init__(self, table: TableEntry, columns: pa.Schema, changelog: bool) -> None:
        options = table.options
        self.layout: TableLayout = table_layout(table.name, table.schema, options,
                                                table.metadata, table.primary_key)
        self.columns = columns
        self.changelog = changelog
        value_prefix = "value." if "value.format" in options else ""
        self.value_format: PayloadFormat = payload_format(
            self.layout.value_format, self.layout.value_schema, options, value_prefix)
        self.key_format: PayloadFormat | None = None
        if self.layout.key_schema is not None and self.layout.key_format is not None:
            self.key_format = payload_format(self.layout.key_format, self.layout.key_schema,
                                             options, "key.")
        self.upsert = UpsertChangelog() if table.connector == "upsert-kafka" else None
        self._metadata = {m.name: m.key for m in self.layout.metadata}
        value_names = set(self.layout.value_schema.names)
        prefix = len(options.get("key.fields-prefix") or "")
        self._key_names = {c: c[prefix:] for c in self.layout.key_columns
                           if c not in value_names}
        self._needs_keys = bool(self._key_names) or self.upsert is not None

    def decode(self, messages: Sequence[Any], splits: Sequence[int],
               where: Callable[[int], str]) -> DecodedRecords:
        values = [m.value() for m in messages]
        keys = [m.key() for m in messages] if self._needs_keys else None
        kinds: np.ndarray | None = None
        if self.upsert is not None:
            assert keys is not None
            changes = self.upsert.apply(splits, keys, values)
            decoded = self.value_format.decode(changes.values, lambda i: where(
                int(changes.records[i])))
            records = changes.records[decoded.messages]
            kinds = changes.kinds[decoded.messages]
            key_payloads: list[bytes | None] = [changes.keys[i] for i in decoded.messages]
        else:
            decoded = self.value_format.decode(values, where)
            records = decoded.messages
            kinds = decoded.kinds
            key_payloads = [keys[i] for i in records] if keys is not None else []
        key_batch = self._keys(key_payloads, lambda i: where(int(records[i])))
        arrays = []
        for field in self.columns:
            name = field.name
            if name in self._metadata:
                arrays.append(_metadata(self._metadata[name], messages, records, field.type))
            elif name in self._key_names:
                assert key_batch is not None
                arrays.append(key_batch.column(self._key_names[name]))
            else:
                arrays.append(decoded.batch.column(name))
        batch = pa.RecordBatch.from_arrays(
            [a if a.type == f.type else a.cast(f.type) for a, f in zip(arrays, self.columns)],
            schema=self.columns)
        if self.changelog:
            batch = with_row_kinds(batch, kinds if kinds is not None else 0)
        return DecodedRecords(batch, records, decoded.skipped)

    def _keys(self, payloads: list[bytes | None], where: Callable[[int], str]
              ) -> pa.RecordBatch | None:
        """The key columns of every row; a row without a key payload has NULL keys."""
        if self.key_format is None or not self._key_names:
            return None
        assert self.layout.key_schema is not None
        present = np.array([p is not None for p in payloads], dtype=bool)
        if present.all():
            decoded = self.key_format.decode(payloads, where)
            if len(decoded.messages) != len(payloads):
                raise ExecutionError(f"{where(0)}: a record key does not parse")
            return decoded.batch
        rows = np.flatnonzero(present)
        decoded = self.key_format.decode([payloads[i] for i in rows],
                                         lambda i: where(int(rows[i])))
        positions = np.full(len(payloads), -1, dtype=np.int64)
        positions[rows[decoded.messages]] = np.arange(len(decoded.messages))
        take = pa.array(positions, mask=positions < 0)
        return pa.RecordBatch.from_arrays([c.take(take) for c in decoded.batch.columns],
                                          schema=decoded.batch.schema)


def _metadata(key: str, messages: Sequence[Any], records: np.ndarray,
              dtype: pa.DataType) -> pa.Array:
    """Metadata column ``key`` for the rows whose records are ``records``."""
    if key == "headers":
        values: list[Any] = [messages[i].headers() or [] for i in records]
        return pa.array(values, pa.map_(pa.string(), pa.binary())).cast(dtype)
    getters: dict[str, tuple[Callable[[Any], Any], pa.DataType]] = {
        "topic": (lambda m: m.topic(), pa.string()),
        "partition": (lambda m: m.partition(), pa.int32()),
        "offset": (lambda m: m.offset(), pa.int64()),
        "leader-epoch": (lambda m: m.leader_epoch(), pa.int32()),
        "timestamp": (lambda m: m.timestamp()[1], pa.int64()),
        "timestamp-type": (lambda m: _TIMESTAMP_TYPES.get(m.timestamp()[0]), pa.string()),
    }
    get, raw_type = getters[key]
    column = pa.array([get(messages[i]) for i in records], raw_type)
    if key == "timestamp":
        column = column.cast(pa.timestamp("ms", "UTC"))
    return column.cast(dtype)
