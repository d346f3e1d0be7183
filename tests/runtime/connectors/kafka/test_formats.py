"""All payload formats: the format registry and option prefixes, round trips
encode -> decode over every supported type with NULLs, and tombstones."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import CatalogError
from flowsql.runtime.connectors.kafka.formats import FORMATS, payload_format


def where(i: int) -> str:
    return f"topic 't' partition 0 offset {i}"


ALL_TYPES = pa.schema([
    ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("dec", pa.decimal128(12, 3)),
    ("flag", pa.bool_()), ("text", pa.string()), ("data", pa.binary()),
    ("day", pa.date32()), ("ts0", pa.timestamp("s")), ("ts3", pa.timestamp("ms")),
    ("ts6", pa.timestamp("us")), ("ltz3", pa.timestamp("ms", "UTC")),
    ("ltz6", pa.timestamp("us", "UTC")),
])

ROWS = [
    {"i8": -128, "i16": 32767, "i32": -2147483648, "i64": 9223372036854775807,
     "f32": 1.5, "f64": -1e-300, "dec": Decimal("-123456789.125"), "flag": True,
     "text": 'héllo, "world"\n\ttab\\ \x01 ☃', "data": b"\x00\x01\xfe\xff\n,\"",
     "day": dt.date(1970, 1, 1), "ts0": dt.datetime(2024, 1, 31, 23, 59, 59),
     "ts3": dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
     "ts6": dt.datetime(2024, 2, 29, 12, 0, 0, 123456),
     "ltz3": dt.datetime(2024, 1, 31, 12, 0, 0, 1000, tzinfo=dt.UTC),
     "ltz6": dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC)},
    dict.fromkeys(ALL_TYPES.names),
    {"i8": 0, "i16": 0, "i32": 0, "i64": 0, "f32": 0.0, "f64": 0.0, "dec": Decimal("0.000"),
     "flag": False, "text": "", "data": b"", "day": dt.date(2024, 12, 31),
     "ts0": dt.datetime(1970, 1, 1), "ts3": dt.datetime(1970, 1, 1),
     "ts6": dt.datetime(1970, 1, 1), "ltz3": dt.datetime(1970, 1, 1, tzinfo=dt.UTC),
     "ltz6": dt.datetime(1970, 1, 1, tzinfo=dt.UTC)},
]


@pytest.mark.parametrize(("name", "options"), [
    ("json", {}), ("avro", {}), ("debezium-json", {}),
    # with a null literal NULL and '' stay apart (see the next test for without)
    ("csv", {"csv.null-literal": "\\N"}),
])
def test_round_trip_of_every_type(name: str, options: dict[str, str]) -> None:
    batch = pa.RecordBatch.from_pylist(ROWS, schema=ALL_TYPES)
    fmt = payload_format(name, ALL_TYPES, options)
    encoded = fmt.encode(batch)
    assert len(encoded) == len(ROWS) and all(isinstance(p, bytes) for p in encoded)
    decoded = fmt.decode([None, *encoded, None], where)
    assert decoded.batch.schema == ALL_TYPES
    assert decoded.batch.to_pylist() == ROWS
    assert decoded.messages.tolist() == [1, 2, 3]
    assert decoded.skipped == 0


def test_csv_round_trip_without_null_literal_reads_null_strings_as_empty() -> None:
    batch = pa.RecordBatch.from_pylist(ROWS, schema=ALL_TYPES)
    fmt = payload_format("csv", ALL_TYPES, {})
    decoded = fmt.decode(fmt.encode(batch), where)
    expected = [dict(row) for row in ROWS]
    # the ambiguity of Flink's csv without a null literal
    expected[1]["text"] = ""
    expected[1]["data"] = b""
    assert decoded.batch.to_pylist() == expected


@pytest.mark.parametrize("column", [pa.field("v", pa.string()), pa.field("v", pa.binary())])
def test_raw_round_trip(column: pa.Field) -> None:
    schema = pa.schema([column])
    values = ["héllo", None, "", "a\nb"] if pa.types.is_string(column.type) else \
        [b"\x00\xff", None, b"", b"a\nb"]
    batch = pa.RecordBatch.from_pydict({"v": pa.array(values, column.type)}, schema=schema)
    fmt = payload_format("raw", schema, {})
    encoded = fmt.encode(batch)
    assert encoded == [None if v is None else (v.encode() if isinstance(v, str) else v)
                       for v in values]
    decoded = fmt.decode(encoded, where)
    assert decoded.batch.equals(batch)
    assert decoded.messages.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("name", ["json", "csv", "avro", "debezium-json"])
def test_tombstones_give_no_rows(name: str) -> None:
    fmt = payload_format(name, ALL_TYPES, {})
    decoded = fmt.decode([None, None], where)
    assert decoded.batch.num_rows == 0 and decoded.batch.schema == ALL_TYPES
    assert decoded.messages.dtype == np.int64 and decoded.messages.tolist() == []
    assert (decoded.kinds is not None) == fmt.changelog
    assert fmt.decode([], where).batch.num_rows == 0


def test_registry() -> None:
    assert sorted(FORMATS) == ["avro", "csv", "debezium-json", "json", "raw"]
    assert payload_format("JSON", ALL_TYPES, {}).changelog is False
    assert payload_format("debezium-json", ALL_TYPES, {}).changelog is True
    with pytest.raises(CatalogError, match="unknown format 'protobuf'.*avro, csv"):
        payload_format("protobuf", ALL_TYPES, {})


def test_options_are_read_under_the_prefix_and_format_name() -> None:
    schema = pa.schema([("id", pa.int32())])
    options = {"key.csv.field-delimiter": ";", "value.csv.field-delimiter": "|",
               "csv.field-delimiter": "\\t"}
    key = payload_format("csv", pa.schema([("a", pa.int32()), ("b", pa.int32())]),
                         options, "key.")
    assert key.decode([b"1;2"], where).batch.to_pylist() == [{"a": 1, "b": 2}]
    value = payload_format("csv", pa.schema([("a", pa.int32()), ("b", pa.int32())]),
                           options, "value.")
    assert value.decode([b"1|2"], where).batch.to_pylist() == [{"a": 1, "b": 2}]
    table = payload_format("csv", pa.schema([("a", pa.int32()), ("b", pa.int32())]), options)
    assert table.decode([b"1\t2"], where).batch.to_pylist() == [{"a": 1, "b": 2}]
    assert payload_format("json", schema, options).decode([b'{"id": 1}'], where).skipped == 0
