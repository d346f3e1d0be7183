"""Flink's ``avro`` format: one schemaless Avro binary record per message.

No container file header and no schema registry: writer and reader both derive the
schema from the table, as Flink's ``AvroSchemaConverter`` does -- a record named
``record`` with one field per column in column order; a nullable column is the union
``["null", type]``. Types: BOOLEAN boolean, TINYINT/SMALLINT/INT int, BIGINT long, FLOAT
float, DOUBLE double, STRING string, BYTES bytes, DATE int (``date``), TIMESTAMP(0..3)
long (``timestamp-millis``), TIMESTAMP(4..6) long (``timestamp-micros``; the same for
TIMESTAMP_LTZ), DECIMAL(p, s) bytes (``decimal``). Other types are refused when the format
is made.

Messages are decoded one by one (fastavro's C reader); the batch is then built column by
column, dates and timestamps from their raw numbers in one Arrow cast each (fastavro is
given the schema without those logical types, so it makes no Python datetimes). A message
that does not decode, or has bytes left after its record, fails the read: Flink's avro
format has no ``ignore-parse-errors``.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa

from flowsql.errors import CatalogError, DataError, ExecutionError
from flowsql.planner import types as T
from flowsql.runtime.connectors.kafka.formats.decoding import Decoded, empty_batch
from flowsql.runtime.connectors.kafka.formats.options import FormatOptions


def avro_type(t: pa.DataType, logical: bool = True) -> Any:
    """The Avro type of a column type (without nullability); ``logical=False`` leaves out
    the date and timestamp logical types (same bytes, raw numbers when read)."""
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_integer(t) and t.bit_width <= 32 and pa.types.is_signed_integer(t):
        return "int"
    if pa.types.is_int64(t):
        return "long"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if T.is_string(t):
        return "string"
    if pa.types.is_binary(t):
        return "bytes"
    if T.is_decimal(t):
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision,
                "scale": t.scale}
    if pa.types.is_date32(t):
        return {"type": "int", "logicalType": "date"} if logical else "int"
    if pa.types.is_timestamp(t) and t.unit != "ns":
        unit = "micros" if t.unit == "us" else "millis"
        return {"type": "long", "logicalType": f"timestamp-{unit}"} if logical else "long"
    raise CatalogError(f"the avro format cannot carry {T.sql_name(t)}")


def avro_schema(schema: pa.Schema, logical: bool = True) -> dict[str, Any]:
    """The Avro record schema Flink derives from the table's columns."""
    fields = []
    for f in schema:
        try:
            kind = avro_type(f.type, logical)
        except CatalogError as e:
            raise CatalogError(f"column '{f.name}': {e}") from None
        fields.append({"name": f.name, "type": ["null", kind] if f.nullable else kind}
                      | ({"default": None} if f.nullable else {}))
    return {"type": "record", "name": "record", "fields": fields}


def _raw_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type of the values fastavro returns for a column of type ``t``."""
    if pa.types.is_date32(t) or (pa.types.is_integer(t) and t.bit_width < 32):
        return pa.int32()
    if pa.types.is_timestamp(t):
        return pa.int64()
    return t


class AvroFormat:
    label = "avro"
    changelog = False

    def __init__(self, schema: pa.Schema, options: FormatOptions) -> None:
        self.schema = schema
        self._parsed = fastavro.parse_schema(avro_schema(schema, logical=False))

    def decode(self, payloads: Sequence[bytes | None], where: Callable[[int], str]
               ) -> Decoded:
        records: list[dict[str, Any]] = []
        messages: list[int] = []
        read = fastavro.schemaless_reader
        for index, payload in enumerate(payloads):
            if payload is None:
                continue
            stream = io.BytesIO(payload)
            try:
                record = read(stream, self._parsed, None)
            except Exception as e:  # noqa: BLE001 -- fastavro raises many kinds on bad bytes
                raise DataError(f"{where(index)}: avro: {_read_problem(e)}") from None
            if stream.tell() != len(payload):
                raise DataError(f"{where(index)}: avro: {len(payload) - stream.tell()} "
                                f"bytes left after the record")
            records.append(record)  # type: ignore[arg-type]  # a record schema reads a dict
            messages.append(index)
        if not records:
            return Decoded(empty_batch(self.schema), np.zeros(0, np.int64), None, 0)
        columns = [self._column([r[f.name] for r in records], f, messages, where)
                   for f in self.schema]
        return Decoded(pa.RecordBatch.from_arrays(columns, schema=self.schema),
                       np.array(messages, dtype=np.int64), None, 0)

    def _column(self, values: list[Any], field: pa.Field, messages: list[int],
                where: Callable[[int], str]) -> pa.Array:
        target = field.type
        try:
            return _arrow_values(values, target)
        except pa.ArrowInvalid:
            for row, value in enumerate(values):
                try:
                    _arrow_values([value], target)
                except pa.ArrowInvalid:
                    raise DataError(f"{where(messages[row])}: avro: field '{field.name}' "
                                    f"value {value} does not fit {T.sql_name(target)}"
                                    ) from None
            raise

    def encode(self, batch: pa.RecordBatch) -> list[bytes | None]:
        columns = [_raw_values(c) for c in batch.columns]
        names = batch.schema.names
        out = io.BytesIO()
        ends = []
        write = fastavro.schemaless_writer
        try:
            for row in zip(*columns):
                write(out, self._parsed, dict(zip(names, row)))
                ends.append(out.tell())
        except (ValueError, TypeError, OverflowError) as e:
            raise ExecutionError(f"avro: cannot write row {len(ends)}: {e}") from None
        data = out.getvalue()
        starts = [0, *ends[:-1]]
        return [data[start:end] for start, end in zip(starts, ends)]


def _arrow_values(values: list[Any], target: pa.DataType) -> pa.Array:
    raw = pa.array(values, _raw_type(target))
    if pa.types.is_timestamp(target):
        unit = "us" if target.unit == "us" else "ms"
        return raw.cast(pa.timestamp(unit, target.tz)).cast(target, safe=False)
    return raw.cast(target)


def _raw_values(column: pa.Array) -> list[Any]:
    t = column.type
    if pa.types.is_date32(t):
        return column.cast(pa.int32()).to_pylist()
    if pa.types.is_timestamp(t):
        unit = "us" if t.unit == "us" else "ms"
        return column.cast(pa.timestamp(unit, t.tz)).cast(pa.int64()).to_pylist()
    return column.to_pylist()


def _read_problem(error: Exception) -> str:
    if isinstance(error, EOFError):
        return "the message ends inside the record"
    if isinstance(error, IndexError):
        return "a union branch index is out of range"
    if isinstance(error, UnicodeDecodeError):
        return "a string is not valid UTF-8"
    return f"cannot decode the record ({type(error).__name__}: {error})"
