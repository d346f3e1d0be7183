"""Rows of a Kafka table as Kafka records: a batch of the table's writable columns becomes
an Arrow table of encoded records (``RECORDS``), one per row, ready to produce or to keep in
a sink's state.

* ``key``: the layout's key columns in the key format (NULL when the table has no key);
* ``value``: the layout's value columns in the value format; NULL for a tombstone;
* ``timestamp``: the ``timestamp`` metadata column in epoch milliseconds (NULL: the broker
  stamps the record);
* ``headers``: the ``headers`` metadata column (NULL: no headers);
* ``partition``: chosen by the sink's partitioner (NULL: the client's partitioner).

A writable ``topic`` metadata column is not read: the sink writes the one topic the table
names (as Flink does when 'topic' names a single topic); the read-only metadata columns
(partition, offset, ...) are VIRTUAL and never reach a sink.

Row kinds (``flowsql.runtime.changelog``): a ``kafka`` table is append-only, so anything but
INSERT is an error; an ``upsert-kafka`` table writes +I and +U as key -> value, -D as
key -> tombstone, and drops -U (the +U that follows replaces the key's value), as Flink's
upsert sink does. An upsert key must not have NULL columns (a record without its key
could never be updated or deleted).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.catalog import TableEntry
from flowsql.runtime.changelog import DELETE, INSERT, LABELS, UPDATE_BEFORE
from flowsql.runtime.connectors.kafka.layout import TableLayout, table_layout
from flowsql.runtime.connectors.kafka.partitioners import Partitioner

HEADERS_TYPE = pa.map_(pa.string(), pa.binary())
RECORDS = pa.schema([
    ("partition", pa.int32()), ("key", pa.binary()), ("value", pa.binary()),
    ("timestamp", pa.int64()), ("headers", HEADERS_TYPE)])
#: metadata keys a sink writes; ``topic`` is the table's 'topic' option
WRITTEN_METADATA = ("timestamp", "headers")


class RecordEncoder:
    """Encodes batches of ``table.writable_schema`` for one sink subtask."""

    def __init__(self, table: TableEntry, partitioner: Partitioner) -> None:
        from flowsql.runtime.connectors.kafka.formats import payload_format

        self.table = table
        self.upsert = table.connector.lower() == "upsert-kafka"
        self.layout: TableLayout = table_layout(table.name, table.schema, table.options,
                                                table.metadata, table.primary_key)
        options = table.options
        value_prefix = "value." if "value.format" in options else ""
        self.value_format = payload_format(self.layout.value_format, self.layout.value_schema,
                                           options, value_prefix)
        self.key_format = None
        if self.layout.key_schema is not None and self.layout.key_format is not None:
            self.key_format = payload_format(self.layout.key_format, self.layout.key_schema,
                                             options, "key.")
        #: metadata key -> column name, for the written metadata the table declares
        self.metadata = {m.key: m.name for m in table.metadata
                         if not m.virtual and m.key in WRITTEN_METADATA}
        self.partitioner = partitioner

    def encode(self, batch: pa.RecordBatch, kinds: np.ndarray | None) -> pa.Table:
        """The records of ``batch`` (see the module docstring)."""
        tombstones = None
        if kinds is not None:
            batch, tombstones = self._apply_kinds(batch, kinds)
        if self.upsert:
            self._check_key_not_null(batch)
        rows = batch.num_rows
        key = (pa.nulls(rows, pa.binary()) if self.key_format is None
               else pa.array(self.key_format.encode(self.layout.key_batch(batch)), pa.binary()))
        value = pa.array(self.value_format.encode(self.layout.value_batch(batch)), pa.binary())
        if tombstones is not None and bool(tombstones.any()):
            value = pc.if_else(pa.array(tombstones), pa.scalar(None, pa.binary()), value)
        return pa.table([self.partitioner.assign(rows), key, value,
                         self._timestamps(batch), self._headers(batch)], schema=RECORDS)

    def _apply_kinds(self, batch: pa.RecordBatch, kinds: np.ndarray
                     ) -> tuple[pa.RecordBatch, np.ndarray]:
        if not self.upsert:
            other = kinds[kinds != INSERT]
            if len(other):
                raise ExecutionError(
                    f"kafka table '{self.table.name}' is append-only and cannot write "
                    f"{LABELS[int(other[0])]} rows (use the upsert-kafka connector for an "
                    "updating result)")
            return batch, np.zeros(batch.num_rows, dtype=bool)
        kept = kinds != UPDATE_BEFORE
        if not kept.all():
            batch = batch.filter(pa.array(kept))
            kinds = kinds[kept]
        return batch, kinds == DELETE

    def _check_key_not_null(self, batch: pa.RecordBatch) -> None:
        for column in self.layout.key_columns:
            if batch.column(column).null_count:
                raise ExecutionError(f"upsert-kafka table '{self.table.name}': key column "
                                     f"'{column}' is NULL (a primary key column must not be "
                                     "NULL)")

    def _timestamps(self, batch: pa.RecordBatch) -> pa.Array:
        name = self.metadata.get("timestamp")
        if name is None:
            return pa.nulls(batch.num_rows, pa.int64())
        column = batch.column(name)
        if pa.types.is_timestamp(column.type):
            column = pc.cast(column, pa.timestamp("ms", column.type.tz), safe=False)
        return pc.cast(column, pa.int64())

    def _headers(self, batch: pa.RecordBatch) -> pa.Array:
        name = self.metadata.get("headers")
        if name is None:
            return pa.nulls(batch.num_rows, HEADERS_TYPE)
        return pc.cast(batch.column(name), HEADERS_TYPE)
