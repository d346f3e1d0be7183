"""The ``csv`` payload format: hand-checked rows per type, options, quoted line breaks,
bad records named by position or skipped, and writing one line per row."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from flowsql.errors import CatalogError, DataError
from flowsql.runtime.connectors.kafka.formats import payload_format


def where(i: int) -> str:
    return f"topic 'orders' partition 1 offset {40 + i}"


SCHEMA = pa.schema([
    ("id", pa.int32()), ("big", pa.int64()), ("ratio", pa.float64()),
    ("amount", pa.decimal128(10, 2)), ("ok", pa.bool_()), ("name", pa.string()),
    ("data", pa.binary()), ("day", pa.date32()), ("ts", pa.timestamp("ms")),
    ("ltz", pa.timestamp("us", "UTC")),
])


def test_every_type() -> None:
    payloads = [
        b'1,-5,0.25,12.50,true,Ann,aGk=,2024-01-31,2024-01-31 12:00:00.5,'
        b'2024-01-31T12:00:00Z',
        b'2,,,,,,,,,',
        b'3,7,1e3,-1,FALSE,"a, ""quoted"" name",,2024-02-29,2024-02-29 00:00:00,'
        b'2024-02-29 01:00:00.000001Z\r\n',
    ]
    decoded = payload_format("csv", SCHEMA, {}).decode(payloads, where)
    assert decoded.batch.schema == SCHEMA
    assert decoded.batch.to_pylist() == [
        {"id": 1, "big": -5, "ratio": 0.25, "amount": Decimal("12.50"), "ok": True,
         "name": "Ann", "data": b"hi", "day": dt.date(2024, 1, 31),
         "ts": dt.datetime(2024, 1, 31, 12, 0, 0, 500000),
         "ltz": dt.datetime(2024, 1, 31, 12, tzinfo=dt.UTC)},
        # no null literal: an empty field is NULL, except for strings and bytes (empty)
        {"id": 2, "big": None, "ratio": None, "amount": None, "ok": None, "name": "",
         "data": b"", "day": None, "ts": None, "ltz": None},
        {"id": 3, "big": 7, "ratio": 1000.0, "amount": Decimal("-1.00"), "ok": False,
         "name": 'a, "quoted" name', "data": b"", "day": dt.date(2024, 2, 29),
         "ts": dt.datetime(2024, 2, 29), "ltz": dt.datetime(2024, 2, 29, 1, 0, 0, 1,
                                                             tzinfo=dt.UTC)},
    ]
    assert decoded.messages.tolist() == [0, 1, 2]


def test_options() -> None:
    schema = pa.schema([("id", pa.int32()), ("name", pa.string())])
    fmt = payload_format("csv", schema, {"value.csv.field-delimiter": "\\t",
                                         "value.csv.null-literal": "N/A",
                                         "value.csv.quote-character": "'"}, "value.")
    decoded = fmt.decode([b"1\tN/A", b"N/A\t'N/A'", b"3\t'x\ty'", b"4\t"], where)
    assert decoded.batch.to_pylist() == [{"id": 1, "name": None}, {"id": None, "name": "N/A"},
                                         {"id": 3, "name": "x\ty"}, {"id": 4, "name": ""}]
    plain = payload_format("csv", schema, {"csv.disable-quote-character": "true"})
    assert plain.decode([b'1,"a"'], where).batch.column(1).to_pylist() == ['"a"']
    with pytest.raises(CatalogError, match="csv.field-delimiter"):
        payload_format("csv", schema, {"csv.field-delimiter": ";;"})


def test_line_breaks_inside_quoted_values() -> None:
    schema = pa.schema([("id", pa.int32()), ("note", pa.string())])
    payloads = [b'1,"two\nlines"', b"2,plain", b'3,"x\r\ny"', b'4,""']
    decoded = payload_format("csv", schema, {}).decode(payloads, where)
    assert decoded.batch.to_pylist() == [{"id": 1, "note": "two\nlines"},
                                         {"id": 2, "note": "plain"},
                                         {"id": 3, "note": "x\r\ny"}, {"id": 4, "note": ""}]


def test_a_message_with_an_open_quote_does_not_swallow_the_next() -> None:
    schema = pa.schema([("id", pa.int32()), ("note", pa.string())])
    payloads = [b'1,"open', b'2,x"', b"3,a\n4,b", b"5,ok"]
    fmt = payload_format("csv", schema, {"csv.ignore-parse-errors": "true"})
    decoded = fmt.decode(payloads, where)
    assert decoded.batch.to_pylist() == [{"id": 5, "note": "ok"}]
    assert decoded.messages.tolist() == [3]
    assert decoded.skipped == 3


BAD = [
    (b"1,2", "csv: expected 10 fields, found 2"),
    (b"x,,,,,,,,,", "csv: field 'id' expects INTEGER, got 'x'"),
    (b"1,,,1.555,,,,,,", "csv: field 'amount' expects DECIMAL(10, 2), got '1.555'"),
    (b"1,,,,maybe,,,,,", "csv: field 'ok' expects BOOLEAN, got 'maybe'"),
    (b"1,,,,,,!!!!,,,", "csv: field 'data' expects BYTES, got '!!!!'"),
    (b"1,,,,,,,2024-13-01,,", "csv: field 'day' expects DATE, got '2024-13-01'"),
    (b"1,,,,,,,,,\n2,,,,,,,,,", "csv: expected one CSV record, found 2"),
    (b"", "csv: the message is empty"),
    (b'1,"open,,,,,,,,', "csv: its quote characters (\") do not pair up"),
]


@pytest.mark.parametrize(("bad", "expected"), BAD)
def test_bad_record_is_named_by_its_position(bad: bytes, expected: str) -> None:
    good = b"1,,,,,,,,,"
    with pytest.raises(DataError) as error:
        payload_format("csv", SCHEMA, {}).decode([good, good, bad, good, good], where)
    assert str(error.value) == "topic 'orders' partition 1 offset 42: " + expected


def test_ignore_parse_errors() -> None:
    payloads = [b"1,,,,,,,,,", *(bad for bad, _ in BAD[:4]), None, b"6,,,,,,,,,",
                *(bad for bad, _ in BAD[4:]), b"9,,,,,,,,,"]
    fmt = payload_format("csv", SCHEMA, {"csv.ignore-parse-errors": "true"})
    decoded = fmt.decode(payloads, where)
    assert decoded.batch.column("id").to_pylist() == [1, 6, 9]
    assert decoded.messages.tolist() == [0, 6, len(payloads) - 1]
    assert decoded.skipped == len(BAD)


def test_single_column_empty_message_is_a_record() -> None:
    schema = pa.schema([("name", pa.string())])
    decoded = payload_format("csv", schema, {}).decode([b"", b"a", None, b""], where)
    assert decoded.batch.column(0).to_pylist() == ["", "a", ""]
    assert decoded.messages.tolist() == [0, 1, 3]


def test_encode_one_line_per_row() -> None:
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("data", pa.binary()),
                        ("ts", pa.timestamp("ms"))])
    batch = pa.RecordBatch.from_pylist([
        {"id": 1, "name": 'say "hi", ok', "data": b"\x00\xff",
         "ts": dt.datetime(2024, 1, 31, 12)},
        {"id": None, "name": "two\nlines", "data": None, "ts": None},
    ], schema=schema)
    payloads = payload_format("csv", schema, {}).encode(batch)
    assert payloads == [b'1,"say ""hi"", ok","AP8=",2024-01-31 12:00:00.000',
                        b',"two\nlines",,']
    literal = payload_format("csv", schema, {"csv.null-literal": "NULL",
                                             "csv.field-delimiter": ";"})
    assert literal.encode(batch.slice(1)) == [b'NULL;"two\nlines";NULL;NULL']
    with pytest.raises(CatalogError, match="quote character"):
        payload_format("csv", schema, {"csv.quote-character": "'"}).encode(batch)
