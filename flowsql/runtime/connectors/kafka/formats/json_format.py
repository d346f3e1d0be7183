"""Flink's ``json`` format: one JSON object per message (types: ``json_values``).

Options: ``json.ignore-parse-errors`` (skip and count a bad message instead of failing)
and ``json.fail-on-missing-field`` (a key the object lacks is an error instead of NULL;
an explicit ``null`` is still NULL). Flink rejects both set to true, and so do we.

A message is bad when it is not one JSON object (invalid JSON, an array, a number,
``null``, an empty message, two documents), or when a value does not fit its column.
Flink's ``ignore-parse-errors`` would set a field it cannot convert to NULL and keep the
row; here the whole message is skipped, as the filesystem connector skips a bad line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import CatalogError
from flowsql.runtime.connectors.kafka.formats.decoding import (
    Decoded,
    Rows,
    all_rows,
    decode_payloads,
)
from flowsql.runtime.connectors.kafka.formats.json_values import (
    as_payloads,
    check_json_types,
    convert_column,
    json_objects,
    parse_schema,
    read_ndjson,
    value_problem,
    wrong_value_guess,
)
from flowsql.runtime.connectors.kafka.formats.options import FormatOptions


class JsonFormat:
    label = "json"
    changelog = False

    def __init__(self, schema: pa.Schema, options: FormatOptions) -> None:
        check_json_types(schema, self.label)
        self.schema = schema
        self.ignore_errors = options.flag("ignore-parse-errors")
        self.fail_on_missing = options.flag("fail-on-missing-field")
        if self.ignore_errors and self.fail_on_missing:
            raise CatalogError(f"options '{options.key('ignore-parse-errors')}' and "
                               f"'{options.key('fail-on-missing-field')}' cannot both be true")
        self._parse_schema = parse_schema(schema)
        self._guess = ObjectGuess(schema, self.fail_on_missing)

    def decode(self, payloads: Sequence[bytes | None], where: Callable[[int], str]
               ) -> Decoded:
        return decode_payloads(payloads, where, self, self.ignore_errors)

    def encode(self, batch: pa.RecordBatch) -> list[bytes | None]:
        return as_payloads(json_objects(batch))

    def parse(self, payloads: list[bytes]) -> Rows:
        table = read_ndjson(payloads, self._parse_schema)
        batch = pa.RecordBatch.from_arrays(
            [convert_column(column, f.type) for column, f in zip(table.columns, self.schema)],
            schema=self.schema)
        rejected = self._rejected(batch, payloads)
        if rejected.any():
            keep = np.flatnonzero(~rejected)
            return Rows(batch.take(pa.array(keep)), keep, None, rejected)
        return Rows(batch, np.arange(batch.num_rows), None, rejected)

    def _rejected(self, batch: pa.RecordBatch, payloads: list[bytes]) -> np.ndarray:
        """With fail-on-missing-field: the messages that lack a key. A missing key reads
        as NULL, so only messages with a NULL are looked at, one by one."""
        rejected = all_rows(batch.num_rows)
        if not (self.fail_on_missing and batch.num_columns):
            return rejected
        nulls = np.logical_or.reduce(
            [pc.is_null(c).to_numpy(zero_copy_only=False) for c in batch.columns])
        names = self.schema.names
        for row in np.flatnonzero(nulls):
            document, _ = load_as_read(payloads[row])
            rejected[row] = not isinstance(document, dict) or \
                any(name not in document for name in names)
        return rejected

    def suspects(self, payloads: list[bytes]) -> np.ndarray:
        guess = self._guess.payload
        return np.array([guess(p) for p in payloads], dtype=bool)

    def problem(self, payload: bytes) -> str | None:
        return object_problem(payload, self.schema, self.fail_on_missing)


class ObjectGuess:
    """A quick guess whether a message is not one good JSON object of ``schema``'s
    fields (see ``BlockParser.suspects``): Python's C parser and a type test per field."""

    def __init__(self, schema: pa.Schema, fail_on_missing: bool) -> None:
        self.fields = [(f.name, wrong_value_guess(f.type)) for f in schema]
        self.fail_on_missing = fail_on_missing

    def payload(self, payload: bytes) -> bool:
        try:
            document = json.loads(payload.replace(b"\n", b" ").replace(b"\r", b" "))
        except ValueError:
            return True
        return self.document(document)

    def document(self, document: object) -> bool:
        if not isinstance(document, dict):
            return True
        for name, wrong in self.fields:
            if name in document:
                if wrong(document[name]):
                    return True
            elif self.fail_on_missing:
                return True
        return False


def object_problem(payload: bytes, schema: pa.Schema, fail_on_missing: bool) -> str | None:
    """What is wrong with a message that should be one JSON object of ``schema``'s
    fields, or None if nothing Python can see."""
    if not payload.strip():
        return "the message is empty"
    try:
        document, repeated = load_as_read(payload)
    except UnicodeDecodeError:
        return "the message is not UTF-8"
    except json.JSONDecodeError as e:
        return f"invalid JSON ({e.msg} at character {e.pos})"
    if repeated is not None:
        return f"field '{repeated}' appears twice"
    return fields_problem(document, schema, fail_on_missing)


def load_as_read(payload: bytes) -> tuple[object, str | None]:
    """``payload`` parsed as ``read_ndjson`` sees it (raw line breaks are spaces), and a
    key its top-level object holds twice, if any (Arrow refuses those)."""
    repeated: list[str | None] = []  # one per object, the outermost last

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        keys = [key for key, _ in items]
        twice = len(set(keys)) != len(keys)
        repeated.append(next(k for k in keys if keys.count(k) > 1) if twice else None)
        return dict(items)

    document = json.loads(payload.replace(b"\n", b" ").replace(b"\r", b" "),
                          object_pairs_hook=pairs)
    return document, repeated[-1] if isinstance(document, dict) else None


def fields_problem(document: object, schema: pa.Schema, fail_on_missing: bool,
                   what: str = "the message") -> str | None:
    if not isinstance(document, dict):
        return f"{what} is not a JSON object but {_json_kind(document)}"
    for f in schema:
        if f.name not in document:
            if fail_on_missing:
                return f"field '{f.name}' is missing"
            continue
        problem = value_problem(f.name, document[f.name], f.type)
        if problem is not None:
            return problem
    return None


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array"
