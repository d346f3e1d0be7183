"""The ``json`` payload format: hand-checked rows per type, the bad-message search (the
error names the right message; ignore-parse-errors keeps the good ones in order),
fail-on-missing-field, and the one-read fast path."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import CatalogError, DataError
from flowsql.runtime.connectors.kafka.formats import json_values, payload_format

UTC = dt.UTC


def where(i: int) -> str:
    return f"topic 'orders' partition 1 offset {40 + i}"


ORDERS = pa.schema([("id", pa.int32()), ("name", pa.string()),
                    ("amount", pa.decimal128(10, 2))])

TYPES = pa.schema([
    ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("dec", pa.decimal128(10, 2)),
    ("flag", pa.bool_()), ("text", pa.string()), ("data", pa.binary()),
    ("day", pa.date32()), ("ts3", pa.timestamp("ms")), ("ts6", pa.timestamp("us")),
    ("ltz", pa.timestamp("ms", "UTC")),
])


def test_every_type_reads_as_flink_writes_it() -> None:
    payloads = [
        json.dumps({"i8": -8, "i16": 300, "i32": -70000, "i64": 9007199254740993,
                    "f32": 1.5, "f64": -2.25, "dec": 12.5, "flag": True, "text": "héllo",
                    "data": "AAH/", "day": "2024-01-31", "ts3": "2024-01-31 12:00:00.123",
                    "ts6": "2024-01-31T12:00:00.123456", "ltz": "2024-01-31T12:00:00Z"}
                   ).encode(),
        # decimals as strings, an integral double, SQL timestamps without a fraction,
        # ISO with a fraction and Z, an unknown key (ignored, even nested)
        b'{"dec": "-0.5", "f64": 3, "ts3": "2024-02-29 23:59:59", "ts6": "2024-02-29 '
        b'00:00:00.5", "ltz": "2024-02-29 01:02:03.004Z", "extra": {"x": [1, 2]}}',
        b'{"i8": null, "text": "", "data": ""}',
    ]
    decoded = payload_format("json", TYPES, {}).decode(payloads, where)
    assert decoded.batch.schema == TYPES
    assert decoded.batch.to_pylist() == [
        {"i8": -8, "i16": 300, "i32": -70000, "i64": 9007199254740993, "f32": 1.5,
         "f64": -2.25, "dec": Decimal("12.50"), "flag": True, "text": "héllo",
         "data": b"\x00\x01\xff", "day": dt.date(2024, 1, 31),
         "ts3": dt.datetime(2024, 1, 31, 12, 0, 0, 123000),
         "ts6": dt.datetime(2024, 1, 31, 12, 0, 0, 123456),
         "ltz": dt.datetime(2024, 1, 31, 12, tzinfo=UTC)},
        {"i8": None, "i16": None, "i32": None, "i64": None, "f32": None, "f64": 3.0,
         "dec": Decimal("-0.50"), "flag": None, "text": None, "data": None, "day": None,
         "ts3": dt.datetime(2024, 2, 29, 23, 59, 59),
         "ts6": dt.datetime(2024, 2, 29, 0, 0, 0, 500000),
         "ltz": dt.datetime(2024, 2, 29, 1, 2, 3, 4000, tzinfo=UTC)},
        {"i8": None, "i16": None, "i32": None, "i64": None, "f32": None, "f64": None,
         "dec": None, "flag": None, "text": "", "data": b"", "day": None, "ts3": None,
         "ts6": None, "ltz": None},
    ]
    assert decoded.messages.tolist() == [0, 1, 2]
    assert decoded.messages.dtype == np.int64
    assert decoded.kinds is None and decoded.skipped == 0


def test_fraction_finer_than_the_column_is_truncated() -> None:
    schema = pa.schema([("ts", pa.timestamp("ms"))])
    decoded = payload_format("json", schema, {}).decode(
        [b'{"ts": "2024-01-31 12:00:00.123456"}'], where)
    assert decoded.batch.column(0).to_pylist() == [dt.datetime(2024, 1, 31, 12, 0, 0, 123000)]


def test_tombstones_yield_no_rows() -> None:
    decoded = payload_format("json", ORDERS, {}).decode(
        [None, b'{"id": 1}', None, None, b'{"id": 4}', None], where)
    assert decoded.batch.column("id").to_pylist() == [1, 4]
    assert decoded.messages.tolist() == [1, 4]
    empty = payload_format("json", ORDERS, {}).decode([None, None], where)
    assert empty.batch.num_rows == 0 and empty.batch.schema == ORDERS
    assert empty.messages.tolist() == []


def test_raw_newline_inside_a_document_is_whitespace() -> None:
    payloads = [b'{"id": 1,\n "name": "a"}', b'{\n"id": 2\n}\n', b'{"id": 3}']
    decoded = payload_format("json", ORDERS, {}).decode(payloads, where)
    assert decoded.batch.to_pylist() == [{"id": 1, "name": "a", "amount": None},
                                         {"id": 2, "name": None, "amount": None},
                                         {"id": 3, "name": None, "amount": None}]


BAD_MESSAGES = [
    (b'{"id": "abc"}', "json: field 'id' expects INTEGER, got \"abc\""),
    (b'{"id": 1.5}', "json: field 'id' expects INTEGER, got 1.5"),
    (b'{"id": 99999999999}', "json: field 'id' expects INTEGER, got 99999999999"),
    (b'{"amount": 1.555}', "json: field 'amount' expects DECIMAL(10, 2), got 1.555"),
    (b'{"name": 5}', "json: field 'name' expects VARCHAR, got 5"),
    (b'{"id": 1', "json: invalid JSON"),
    (b'null', "json: the message is not a JSON object but null"),
    (b'  null ', "json: the message is not a JSON object but null"),
    (b'[1, 2]', "json: the message is not a JSON object but an array"),
    (b'7', "json: the message is not a JSON object but a number"),
    (b'', "json: the message is empty"),
    (b'{"id": 1} {"id": 2}', "json: invalid JSON (Extra data"),
    (b'{"name": "\xff"}', "json: the message is not UTF-8"),
    (b'{"id": 1, "id": 2}', "json: field 'id' appears twice"),
]


@pytest.mark.parametrize(("bad", "expected"), BAD_MESSAGES)
def test_bad_message_is_named_by_its_position(bad: bytes, expected: str) -> None:
    payloads = [b'{"id": 1}', b'{"id": 2}', bad, b'{"id": 4}', b'{"id": 5}']
    with pytest.raises(DataError) as error:
        payload_format("json", ORDERS, {}).decode(payloads, where)
    assert str(error.value).startswith("topic 'orders' partition 1 offset 42: " + expected)


def test_first_of_several_bad_messages_is_reported() -> None:
    payloads = [b'{"id": 1}', None, b'{"id": 2}', b'{"id": "x"}', b'[]', b'{"id": "y"}']
    with pytest.raises(DataError, match=r"^topic 'orders' partition 1 offset 43: json: "
                                        r"field 'id' expects INTEGER, got \"x\"$"):
        payload_format("json", ORDERS, {}).decode(payloads, where)


def test_ignore_parse_errors_keeps_the_good_messages_in_order() -> None:
    payloads = [b'{"id": 1}', *(bad for bad, _ in BAD_MESSAGES[:6]), None, b'{"id": 8}',
                *(bad for bad, _ in BAD_MESSAGES[6:]), b'{"id": 9, "amount": 9.99}']
    fmt = payload_format("json", ORDERS, {"json.ignore-parse-errors": "true"})
    decoded = fmt.decode(payloads, where)
    assert decoded.batch.to_pylist() == [
        {"id": 1, "name": None, "amount": None}, {"id": 8, "name": None, "amount": None},
        {"id": 9, "name": None, "amount": Decimal("9.99")}]
    assert decoded.messages.tolist() == [0, 8, len(payloads) - 1]
    assert decoded.skipped == len(BAD_MESSAGES)


def test_bad_messages_among_many_blocks() -> None:
    """More messages than one bisected block: the block split keeps positions right."""
    n = 5000
    bad = {7, 1023, 1024, 1025, 2048, 4999}
    payloads: list[bytes | None] = [b'{"id": %d}' % i if i not in bad else b'{"id": "no"}'
                                    for i in range(n)]
    payloads[3000] = None
    fmt = payload_format("json", ORDERS, {"json.ignore-parse-errors": "true"})
    decoded = fmt.decode(payloads, where)
    expected = [i for i in range(n) if i not in bad and i != 3000]
    assert decoded.messages.tolist() == expected
    assert decoded.batch.column("id").to_pylist() == expected
    assert decoded.skipped == len(bad)
    with pytest.raises(DataError, match="offset 47: json: field 'id'"):
        payload_format("json", ORDERS, {}).decode(payloads, where)


def test_fail_on_missing_field() -> None:
    payloads = [b'{"id": 1, "name": "a", "amount": 1}',
                b'{"id": 2, "name": null, "amount": null}',  # explicit null is no gap
                b'{"id": 3, "amount": 3}']
    lenient = payload_format("json", ORDERS, {}).decode(payloads, where)
    assert lenient.batch.column("name").to_pylist() == ["a", None, None]
    strict = payload_format("json", ORDERS, {"json.fail-on-missing-field": "true"})
    with pytest.raises(DataError, match=r"^topic 'orders' partition 1 offset 42: json: "
                                        r"field 'name' is missing$"):
        strict.decode(payloads, where)
    decoded = strict.decode(payloads[:2], where)
    assert decoded.batch.column("id").to_pylist() == [1, 2]


def test_missing_field_is_found_before_a_later_bad_value() -> None:
    strict = payload_format("json", ORDERS, {"json.fail-on-missing-field": "true"})
    full = b'{"id": 1, "name": "a", "amount": 1}'
    payloads = [full, b'{"id": 2, "name": "b"}', b'{"id": "x", "name": "c", "amount": 1}']
    with pytest.raises(DataError, match="offset 41: json: field 'amount' is missing"):
        strict.decode(payloads, where)


def test_option_spelling_and_validation() -> None:
    fmt = payload_format("json", ORDERS, {"key.json.ignore-parse-errors": "true"}, "key.")
    assert fmt.decode([b"nope"], where).skipped == 1
    # an option for the other part does not apply
    other = payload_format("json", ORDERS, {"value.json.ignore-parse-errors": "true"}, "key.")
    with pytest.raises(DataError):
        other.decode([b"nope"], where)
    with pytest.raises(CatalogError, match="json.ignore-parse-errors"):
        payload_format("json", ORDERS, {"json.ignore-parse-errors": "yes please"})
    with pytest.raises(CatalogError, match="cannot both be true"):
        payload_format("json", ORDERS, {"json.ignore-parse-errors": "true",
                                        "json.fail-on-missing-field": "true"})
    with pytest.raises(CatalogError, match="column 't' of type TIME"):
        payload_format("json", pa.schema([("t", pa.time64("us"))]), {})


def test_encode_writes_one_object_per_row() -> None:
    batch = pa.RecordBatch.from_pylist([
        {"i8": 1, "i16": 2, "i32": 3, "i64": 4, "f32": 0.5, "f64": 1e20,
         "dec": Decimal("1.50"), "flag": False, "text": 'a"b\\c\nd\x01é', "data": b"hi",
         "day": dt.date(2024, 1, 31), "ts3": dt.datetime(2024, 1, 31, 12, 0, 0, 5000),
         "ts6": dt.datetime(2024, 1, 31, 12, 0, 0, 123456),
         "ltz": dt.datetime(2024, 1, 31, 12, tzinfo=UTC)},
        dict.fromkeys(TYPES.names),
    ], schema=TYPES)
    payloads = payload_format("json", TYPES, {}).encode(batch)
    assert payloads[0] == (
        '{"i8":1,"i16":2,"i32":3,"i64":4,"f32":0.5,"f64":1e+20,"dec":1.50,"flag":false,'
        '"text":"a\\"b\\\\c\\nd\\u0001é","data":"aGk=","day":"2024-01-31",'
        '"ts3":"2024-01-31 12:00:00.005","ts6":"2024-01-31 12:00:00.123456",'
        '"ltz":"2024-01-31 12:00:00.000Z"}').encode()
    assert json.loads(payloads[1]) == dict.fromkeys(TYPES.names)


def test_encode_refuses_nan() -> None:
    batch = pa.RecordBatch.from_pydict({"x": [1.0, float("nan")]})
    with pytest.raises(Exception, match="NaN"):
        payload_format("json", batch.schema, {}).encode(batch)


def test_many_small_messages_are_read_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    read_json = json_values.pjson.read_json

    def counting(*args: object, **kwargs: object) -> pa.Table:
        calls.append(1)
        return read_json(*args, **kwargs)

    monkeypatch.setattr(json_values.pjson, "read_json", counting)
    payloads = [b'{"id": %d, "name": "n%d", "amount": %d.5}' % (i, i, i)
                for i in range(100_000)]
    decoded = payload_format("json", ORDERS, {}).decode(payloads, where)
    assert len(calls) == 1
    assert decoded.batch.num_rows == 100_000
    assert decoded.batch.column("id").to_pylist()[-3:] == [99_997, 99_998, 99_999]
    assert decoded.messages.tolist() == list(range(100_000))


def test_byte_order_mark_is_skipped_wherever_the_message_is() -> None:
    bom = "\ufeff".encode()
    payloads = [bom + b'{"id": 1}', b'{"id": 2}', bom + b'{"id": 3}', bom + b"null"]
    fmt = payload_format("json", ORDERS, {"json.ignore-parse-errors": "true"})
    decoded = fmt.decode(payloads, where)
    assert decoded.batch.column("id").to_pylist() == [1, 2, 3]
    assert decoded.skipped == 1
    with pytest.raises(DataError, match="offset 40: json: the message is not a JSON object"):
        payload_format("json", ORDERS, {}).decode([bom + b"null"], where)
