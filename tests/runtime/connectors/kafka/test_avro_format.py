"""The ``avro`` payload format: the schema Flink derives from a table, bytes that any Avro
reader with that schema agrees on, hand-checked rows, and bad messages named by position."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa
import pytest

from flowsql.errors import CatalogError, DataError
from flowsql.runtime.connectors.kafka.formats import avro_schema, payload_format


def where(i: int) -> str:
    return f"topic 'orders' partition 1 offset {40 + i}"


SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("qty", pa.int32()), ("small", pa.int16()),
    ("price", pa.float64()), ("ratio", pa.float32()), ("paid", pa.bool_()),
    ("name", pa.string()), ("blob", pa.binary()), ("day", pa.date32()),
    ("at_ms", pa.timestamp("ms")), ("at_us", pa.timestamp("us")),
    ("ltz", pa.timestamp("ms", "UTC")), ("amount", pa.decimal128(10, 2)),
])


def test_schema_derived_as_flink_does() -> None:
    def nullable(kind: Any) -> Any:
        return ["null", kind]

    assert avro_schema(SCHEMA) == {"type": "record", "name": "record", "fields": [
        {"name": "id", "type": "long"},
        {"name": "qty", "type": nullable("int"), "default": None},
        {"name": "small", "type": nullable("int"), "default": None},
        {"name": "price", "type": nullable("double"), "default": None},
        {"name": "ratio", "type": nullable("float"), "default": None},
        {"name": "paid", "type": nullable("boolean"), "default": None},
        {"name": "name", "type": nullable("string"), "default": None},
        {"name": "blob", "type": nullable("bytes"), "default": None},
        {"name": "day", "type": nullable({"type": "int", "logicalType": "date"}),
         "default": None},
        {"name": "at_ms", "type": nullable({"type": "long", "logicalType": "timestamp-millis"}),
         "default": None},
        {"name": "at_us", "type": nullable({"type": "long", "logicalType": "timestamp-micros"}),
         "default": None},
        {"name": "ltz", "type": nullable({"type": "long", "logicalType": "timestamp-millis"}),
         "default": None},
        {"name": "amount", "type": nullable({"type": "bytes", "logicalType": "decimal",
                                             "precision": 10, "scale": 2}), "default": None},
    ]}


RECORD = {"id": 7, "qty": -3, "small": 300, "price": 9.75, "ratio": 0.5, "paid": True,
          "name": "Zoë", "blob": b"\x00\x01", "day": dt.date(2024, 1, 31),
          "at_ms": dt.datetime(2024, 1, 31, 12, 0, 0, 123000, tzinfo=dt.UTC),
          "at_us": dt.datetime(2024, 1, 31, 12, 0, 0, 123456, tzinfo=dt.UTC),
          "ltz": dt.datetime(2024, 1, 31, 12, tzinfo=dt.UTC), "amount": Decimal("-12.34")}
EXPECTED = {**RECORD, "at_ms": dt.datetime(2024, 1, 31, 12, 0, 0, 123000),
            "at_us": dt.datetime(2024, 1, 31, 12, 0, 0, 123456)}


def reference_bytes(record: dict[str, Any]) -> bytes:
    """The bytes of ``record`` written by fastavro itself with the logical schema."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(avro_schema(SCHEMA)), record)
    return out.getvalue()


def test_decodes_what_an_avro_writer_wrote() -> None:
    nulls = {**dict.fromkeys(SCHEMA.names), "id": 8}
    payloads = [reference_bytes(RECORD), None, reference_bytes(nulls)]
    decoded = payload_format("avro", SCHEMA, {}).decode(payloads, where)
    assert decoded.batch.schema == SCHEMA
    assert decoded.batch.to_pylist() == [EXPECTED, nulls]
    assert decoded.messages.tolist() == [0, 2]
    assert decoded.kinds is None and decoded.skipped == 0


def test_encodes_what_an_avro_writer_writes() -> None:
    batch = pa.RecordBatch.from_pylist([EXPECTED], schema=SCHEMA)
    assert payload_format("avro", SCHEMA, {}).encode(batch) == [reference_bytes(RECORD)]


def test_bad_messages_fail_naming_the_message() -> None:
    good = reference_bytes(RECORD)
    fmt = payload_format("avro", SCHEMA, {"avro.ignore-parse-errors": "true"})
    cases = [(good[:-1], "the message ends inside the record"),
             (good + b"\x00", "1 bytes left after the record"),
             (b"", "the message ends inside the record"),
             (good[:1] + b"\x06" + good[2:], "a union branch index is out of range")]
    for bad, expected in cases:
        with pytest.raises(DataError) as error:
            fmt.decode([good, None, bad, good], where)
        assert str(error.value) == f"topic 'orders' partition 1 offset 42: avro: {expected}"


def test_value_too_large_for_a_small_column() -> None:
    big = reference_bytes({**RECORD, "small": 70000})
    with pytest.raises(DataError, match="offset 41: avro: field 'small' value 70000 does "
                                        "not fit SMALLINT"):
        payload_format("avro", SCHEMA, {}).decode([reference_bytes(RECORD), big], where)


def test_types_avro_cannot_carry() -> None:
    for t in (pa.time64("us"), pa.timestamp("ns"), pa.uint32()):
        with pytest.raises(CatalogError, match="column 'c'"):
            payload_format("avro", pa.schema([("c", t)]), {})
