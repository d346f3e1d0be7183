"""The ``debezium-json`` payload format: c/r/u/d events become +I, -U/+U and -D rows with
their message positions, with and without the Kafka Connect schema envelope; bad events
fail naming the message or are skipped; writing gives create events."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from flowsql.errors import DataError
from flowsql.runtime.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from flowsql.runtime.connectors.kafka.formats import payload_format


def where(i: int) -> str:
    return f"topic 'products' partition 0 offset {100 + i}"


SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()),
                    ("weight", pa.decimal128(10, 3)), ("updated", pa.timestamp("ms"))])


def event(op: str, before: dict | None, after: dict | None) -> dict:
    return {"before": before, "after": after, "op": op, "ts_ms": 1589362330904,
            "source": {"connector": "mysql", "db": "inventory", "table": "products"}}


SCOOTER = {"id": 111, "name": "scooter", "weight": 5.18, "updated": "2024-01-31 12:00:00"}
SCOOTER2 = {"id": 111, "name": "scooter", "weight": 5.17, "updated": "2024-01-31T12:30:00Z"}
HAMMER = {"id": 101, "name": "hammer", "weight": 0.75, "updated": None}

EVENTS = [
    event("r", None, HAMMER),
    event("c", None, SCOOTER),
    event("u", SCOOTER, SCOOTER2),
    event("d", SCOOTER2, None),
]

ROWS = [
    {"id": 101, "name": "hammer", "weight": Decimal("0.750"), "updated": None},
    {"id": 111, "name": "scooter", "weight": Decimal("5.180"),
     "updated": dt.datetime(2024, 1, 31, 12)},
    {"id": 111, "name": "scooter", "weight": Decimal("5.180"),
     "updated": dt.datetime(2024, 1, 31, 12)},
    {"id": 111, "name": "scooter", "weight": Decimal("5.170"),
     "updated": dt.datetime(2024, 1, 31, 12, 30)},
    {"id": 111, "name": "scooter", "weight": Decimal("5.170"),
     "updated": dt.datetime(2024, 1, 31, 12, 30)},
]


def payloads(events: list[dict], envelope: bool = False) -> list[bytes | None]:
    if envelope:
        events = [{"schema": {"type": "struct", "optional": False}, "payload": e}
                  for e in events]
    return [json.dumps(e).encode() for e in events]


def test_change_events_become_changelog_rows() -> None:
    messages = payloads(EVENTS)
    # Debezium follows a delete with a tombstone; an empty message is skipped too
    messages = [messages[0], None, messages[1], b"", messages[2], messages[3], None]
    decoded = payload_format("debezium-json", SCHEMA, {}).decode(messages, where)
    assert decoded.batch.schema == SCHEMA
    assert decoded.batch.to_pylist() == ROWS
    assert decoded.kinds is not None
    assert decoded.kinds.tolist() == [INSERT, INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]
    assert decoded.messages.tolist() == [0, 2, 4, 4, 5]
    assert decoded.skipped == 0


def test_schema_include_reads_the_payload_of_the_envelope() -> None:
    fmt = payload_format("debezium-json", SCHEMA, {"debezium-json.schema-include": "true"})
    assert fmt.changelog
    decoded = fmt.decode(payloads(EVENTS, envelope=True), where)
    assert decoded.batch.to_pylist() == ROWS
    assert decoded.kinds is not None
    assert decoded.kinds.tolist() == [INSERT, INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]
    assert decoded.messages.tolist() == [0, 1, 2, 2, 3]
    # without the option, an envelope has no op: a bad event
    with pytest.raises(DataError, match="offset 100: debezium-json: the event has no 'op'"):
        payload_format("debezium-json", SCHEMA, {}).decode(
            payloads(EVENTS, envelope=True), where)


BAD_EVENTS = [
    (event("x", None, HAMMER), "debezium-json: unknown op \"x\" (expected c, r, u or d)"),
    ({"after": HAMMER}, "debezium-json: the event has no 'op'"),
    (event("u", None, SCOOTER), "debezium-json: an event with op 'u' needs 'before'"),
    (event("d", None, None), "debezium-json: an event with op 'd' needs 'before'"),
    (event("c", None, None), "debezium-json: an event with op 'c' needs 'after'"),
    (event("c", None, {"id": "one"}),
     "debezium-json: after: field 'id' expects INTEGER, got \"one\""),
    (event("d", {"id": 1, "updated": "yesterday"}, None),
     "debezium-json: before: field 'updated' expects TIMESTAMP"),
    (None, "debezium-json: the message is not a JSON object"),
    ([1], "debezium-json: the message is not a JSON object"),
]


@pytest.mark.parametrize(("bad", "expected"), BAD_EVENTS)
def test_bad_event_is_named_by_its_position(bad: object, expected: str) -> None:
    messages = payloads(EVENTS[:2]) + [json.dumps(bad).encode()] + payloads(EVENTS[2:])
    with pytest.raises(DataError) as error:
        payload_format("debezium-json", SCHEMA, {}).decode(messages, where)
    assert str(error.value).startswith("topic 'products' partition 0 offset 102: " + expected)


def test_ignore_parse_errors_skips_bad_events() -> None:
    messages = [*payloads(EVENTS[:2]), *(json.dumps(b).encode() for b, _ in BAD_EVENTS),
                b"{not json", *payloads(EVENTS[2:])]
    fmt = payload_format("debezium-json", SCHEMA, {"debezium-json.ignore-parse-errors": "true"})
    decoded = fmt.decode(messages, where)
    assert decoded.batch.to_pylist() == ROWS
    assert decoded.kinds is not None
    assert decoded.kinds.tolist() == [INSERT, INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE]
    after_bad = 2 + len(BAD_EVENTS) + 1
    assert decoded.messages.tolist() == [0, 1, after_bad, after_bad, after_bad + 1]
    assert decoded.skipped == len(BAD_EVENTS) + 1


def test_only_tombstones() -> None:
    decoded = payload_format("debezium-json", SCHEMA, {}).decode([None, b""], where)
    assert decoded.batch.num_rows == 0 and decoded.batch.schema == SCHEMA
    assert decoded.kinds is not None and decoded.kinds.tolist() == []


def test_encode_writes_create_events() -> None:
    batch = pa.RecordBatch.from_pylist(ROWS[:2], schema=SCHEMA)
    fmt = payload_format("debezium-json", SCHEMA, {})
    encoded = fmt.encode(batch)
    assert [json.loads(p) for p in encoded] == [
        {"before": None, "after": {"id": 101, "name": "hammer", "weight": 0.75,
                                   "updated": None}, "op": "c"},
        {"before": None, "after": {"id": 111, "name": "scooter", "weight": 5.18,
                                   "updated": "2024-01-31 12:00:00.000"}, "op": "c"},
    ]
    decoded = fmt.decode(encoded, where)
    assert decoded.batch.equals(batch)
    assert decoded.kinds is not None and decoded.kinds.tolist() == [INSERT, INSERT]
