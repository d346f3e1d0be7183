"""The search for bad messages (``formats.decoding``) is exact: decoding a poll with
ignore-parse-errors gives the rows, positions and row kinds of decoding every message on
its own, whatever mix of good and bad messages the poll holds -- including bad messages the
quick guess misses and good ones it suspects -- and without the option the error names the
first bad message."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import DataError
from flowsql.runtime.connectors.kafka.formats import payload_format
from flowsql.runtime.connectors.kafka.formats.decoding import Decoded

SCHEMA = pa.schema([("id", pa.int32()), ("name", pa.string()),
                    ("amount", pa.decimal128(6, 2)), ("day", pa.date32())])


def where(i: int) -> str:
    return f"offset {i}"


def json_messages(rng: random.Random, n: int) -> list[bytes | None]:
    def good(i: int) -> bytes:
        return json.dumps({"id": i, "name": f"n{i}", "amount": round(i / 100, 2) % 1000,
                           "day": "2024-01-31"}).encode()

    bad = [
        b'{"id": "x"}', b"[1]", b"null", b"", b"   ", b'{"id": 1', b'{"id": 1}{"id": 2}',
        b'{"amount": 1.555}',            # the guess misses: too many digits for the scale
        b'{"id": 3000000000}',           # out of INT range (the guess sees it)
        b'{"day": "2024-02-30"}',        # the guess misses: no such day
        b'{"name": "\xff"}',             # not UTF-8
        b'{"id": 1, "id": 2}',           # the guess misses: a key twice
    ]
    suspicious_but_good = [b'{"id": 5, "other": "\xff"}',  # Python refuses, Arrow ignores
                           b'{\n"id": 6\n}', b'{"id": 7}\r\n']
    out: list[bytes | None] = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.05:
            out.append(None)
        elif roll < 0.25:
            out.append(rng.choice(bad))
        elif roll < 0.30:
            out.append(rng.choice(suspicious_but_good))
        else:
            out.append(good(i))
    return out


def csv_messages(rng: random.Random, n: int) -> list[bytes | None]:
    bad = [b"x,a,1,2024-01-31", b"1,a", b'1,"open,1,2024-01-31', b"1,a,1.555,2024-01-31",
           b"1,a,1,2024-02-30", b"", b"1,a,1,2024-01-31\n2,b,2,2024-01-31", b"1,\xff,1,"]
    out: list[bytes | None] = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.05:
            out.append(None)
        elif roll < 0.25:
            out.append(rng.choice(bad))
        elif roll < 0.3:
            out.append(b'%d,"two\nlines",,' % i)
        else:
            out.append(b"%d,n%d,%d.5,2024-01-31" % (i, i, i % 1000))
    return out


def debezium_messages(rng: random.Random, n: int) -> list[bytes | None]:
    def row(i: int) -> dict:
        return {"id": i, "name": f"n{i}", "amount": 1.5, "day": "2024-01-31"}

    out: list[bytes | None] = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.05:
            out.append(None)
        elif roll < 0.2:
            out.append(rng.choice([b'{"op": "x"}', b'{"op": "u", "after": {"id": 1}}',
                                   b'{"op": "c", "after": {"amount": 1.555}}', b"{",
                                   b'{"op": "d", "before": {"id": "x"}}']))
        else:
            op = rng.choice("cru d")
            before = row(i) if op in "ud" else None
            after = row(i + 1) if op in "cru" else None
            out.append(json.dumps({"before": before, "after": after,
                                   "op": op.strip() or "d"}).encode())
    return out


FORMATS = [
    ("json", {"json.ignore-parse-errors": "true"}, json_messages),
    ("csv", {"csv.ignore-parse-errors": "true"}, csv_messages),
    ("debezium-json", {"debezium-json.ignore-parse-errors": "true"}, debezium_messages),
]


def one_by_one(fmt: object, payloads: list[bytes | None]) -> tuple[list, list, list, int]:
    rows: list = []
    messages: list = []
    kinds: list = []
    skipped = 0
    for i, p in enumerate(payloads):
        alone: Decoded = fmt.decode([p], where)  # type: ignore[attr-defined]
        rows += alone.batch.to_pylist()
        messages += [i] * alone.batch.num_rows
        kinds += [] if alone.kinds is None else alone.kinds.tolist()
        skipped += alone.skipped
    return rows, messages, kinds, skipped


@pytest.mark.parametrize(("name", "options", "make"), FORMATS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_poll_decodes_as_its_messages_do_one_by_one(name: str, options: dict, make: object,
                                                      seed: int) -> None:
    rng = random.Random(seed)
    payloads = make(rng, 3000)  # type: ignore[operator]
    fmt = payload_format(name, SCHEMA, options)
    decoded = fmt.decode(payloads, where)
    rows, messages, kinds, skipped = one_by_one(fmt, payloads)
    assert decoded.batch.to_pylist() == rows
    assert decoded.messages.tolist() == messages
    assert bool(np.all(np.diff(decoded.messages) >= 0))
    assert ([] if decoded.kinds is None else decoded.kinds.tolist()) == kinds
    assert decoded.skipped == skipped
    assert 0 < skipped < len(payloads)


@pytest.mark.parametrize(("name", "options", "make"), FORMATS)
def test_without_ignoring_the_first_bad_message_is_named(name: str, options: dict,
                                                         make: object) -> None:
    payloads = make(random.Random(5), 3000)  # type: ignore[operator]
    strict = payload_format(name, SCHEMA, {})
    lenient = payload_format(name, SCHEMA, options)
    first_bad = next(i for i, p in enumerate(payloads)
                     if p is not None and lenient.decode([p], where).skipped)
    with pytest.raises(DataError, match=f"^offset {first_bad}: {name}: "):
        strict.decode(payloads, where)
