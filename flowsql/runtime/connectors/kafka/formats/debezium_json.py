"""Flink's ``debezium-json`` format: Debezium change events as changelog rows.

An event is ``{"before": {...} | null, "after": {...} | null, "op": "c" | "r" | "u" | "d"}``
(other keys such as ``source`` or ``ts_ms`` are ignored); with
``debezium-json.schema-include`` = true, as Kafka Connect writes it with schemas enabled,
the event is the ``payload`` of ``{"schema": ..., "payload": {...}}``. ``before`` and
``after`` hold the table's columns, typed as in the json format (``json_values``).

Rows, in event order: ``c`` (create) and ``r`` (snapshot read) give +I of ``after``; ``u``
gives -U of ``before`` then +U of ``after``; ``d`` gives -D of ``before``. An unknown or
missing ``op``, or a missing ``before``/``after`` that the op needs (a ``u``/``d`` without
``before`` comes from a Postgres table without REPLICA IDENTITY FULL), is a bad event.
Empty messages are skipped like tombstones, as Flink does (Debezium follows a delete with
one). ``debezium-json.ignore-parse-errors`` skips and counts bad events.

All events of a poll are parsed by one ``read_json`` whose schema has struct columns
``before`` and ``after``; the output rows are then taken from both at once.

Writing takes insert-only rows: each becomes ``{"before": null, "after": {...},
"op": "c"}`` (Flink writes a delete as ``op`` "d" with ``before``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.changelog import DELETE, INSERT, UPDATE_AFTER, UPDATE_BEFORE
from flowsql.runtime.connectors.kafka.formats.decoding import Decoded, Rows, decode_payloads
from flowsql.runtime.connectors.kafka.formats.json_format import (
    ObjectGuess,
    fields_problem,
    load_as_read,
)
from flowsql.runtime.connectors.kafka.formats.json_values import (
    as_payloads,
    check_json_types,
    convert_column,
    json_objects,
    parse_schema,
    read_ndjson,
)
from flowsql.runtime.connectors.kafka.formats.options import FormatOptions

#: op -> (kind of the row from ``before`` or -1, kind of the row from ``after`` or -1)
_OPS = {"c": (-1, INSERT), "r": (-1, INSERT), "u": (UPDATE_BEFORE, UPDATE_AFTER),
        "d": (DELETE, -1)}
_OP_NAMES = pa.array(list(_OPS))
_BEFORE_KINDS = np.array([k[0] for k in _OPS.values()] + [-1], dtype=np.int8)
_AFTER_KINDS = np.array([k[1] for k in _OPS.values()] + [-1], dtype=np.int8)


class DebeziumJsonFormat:
    label = "debezium-json"
    changelog = True

    def __init__(self, schema: pa.Schema, options: FormatOptions) -> None:
        check_json_types(schema, self.label)
        self.schema = schema
        self.ignore_errors = options.flag("ignore-parse-errors")
        self.schema_include = options.flag("schema-include")
        self._guess = ObjectGuess(schema, fail_on_missing=False)
        row = pa.struct(list(parse_schema(schema)))
        event = pa.struct([("before", row), ("after", row), ("op", pa.string())])
        self._parse_schema = pa.schema([("payload", event)]) if self.schema_include else \
            pa.schema(list(event))

    def decode(self, payloads: Sequence[bytes | None], where: Callable[[int], str]
               ) -> Decoded:
        return decode_payloads(payloads, where, self, self.ignore_errors, skip_empty=True,
                               changelog=True)

    def encode(self, batch: pa.RecordBatch) -> list[bytes | None]:
        after = json_objects(batch)
        return as_payloads(pc.binary_join_element_wise(
            '{"before":null,"after":', after, ',"op":"c"}', ""))

    def parse(self, payloads: list[bytes]) -> Rows:
        table = read_ndjson(payloads, self._parse_schema)
        if self.schema_include:  # flatten: a NULL payload makes its op NULL too
            before, after, op = table.column(0).combine_chunks().flatten()
        else:
            before, after, op = (table.column(n).combine_chunks()
                                 for n in ("before", "after", "op"))
        code = pc.fill_null(pc.index_in(op, value_set=_OP_NAMES), len(_OPS)).to_numpy()
        before_kind = _BEFORE_KINDS[code]
        after_kind = _AFTER_KINDS[code]
        has_before = pc.is_valid(before).to_numpy(zero_copy_only=False)
        has_after = pc.is_valid(after).to_numpy(zero_copy_only=False)
        rejected = ((before_kind < 0) & (after_kind < 0)) \
            | ((before_kind >= 0) & ~has_before) | ((after_kind >= 0) & ~has_after)
        # two candidate rows per event, from before then after, as the events go
        kinds = np.stack([before_kind, after_kind], axis=1)
        kinds[rejected] = -1
        chosen = np.flatnonzero(kinds.reshape(-1) >= 0)
        event_of = chosen // 2
        source = np.where(chosen % 2 == 0, event_of, event_of + len(before))
        rows = pa.concat_arrays([before, after]).take(pa.array(source))
        batch = pa.RecordBatch.from_arrays(
            [convert_column(column, f.type) for column, f in zip(rows.flatten(), self.schema)],
            schema=self.schema)
        return Rows(batch, event_of, kinds.reshape(-1)[chosen], rejected)

    def suspects(self, payloads: list[bytes]) -> np.ndarray:
        return np.array([self._looks_wrong(p) for p in payloads], dtype=bool)

    def _looks_wrong(self, payload: bytes) -> bool:
        try:
            document = json.loads(payload.replace(b"\n", b" ").replace(b"\r", b" "))
        except ValueError:
            return True
        if self.schema_include:
            document = document.get("payload") if isinstance(document, dict) else None
        if not isinstance(document, dict):
            return True
        op = document.get("op")
        if not isinstance(op, str) or op not in _OPS:
            return True
        for part, kind in zip(("before", "after"), _OPS[op]):
            value = document.get(part)
            if (kind >= 0 and value is None) or (value is not None
                                                 and self._guess.document(value)):
                return True
        return False

    def problem(self, payload: bytes) -> str | None:
        try:
            document, repeated = load_as_read(payload)
        except UnicodeDecodeError:
            return "the message is not UTF-8"
        except json.JSONDecodeError as e:
            return f"invalid JSON ({e.msg} at character {e.pos})"
        if repeated is not None:
            return f"field '{repeated}' appears twice"
        if self.schema_include:
            if not isinstance(document, dict) or not isinstance(document.get("payload"), dict):
                return "the message has no 'payload' object (is 'schema-include' right?)"
            document = document["payload"]
        if not isinstance(document, dict):
            return "the message is not a JSON object"
        op = document.get("op")
        if op is None:
            return "the event has no 'op'"
        if not isinstance(op, str) or op not in _OPS:
            return f"unknown op {json.dumps(op)} (expected c, r, u or d)"
        before_kind, after_kind = _OPS[op]
        for part, needed in (("before", before_kind >= 0), ("after", after_kind >= 0)):
            value = document.get(part)
            if value is None and needed:
                hint = " (from Postgres: is the table's REPLICA IDENTITY FULL?)" \
                    if part == "before" else ""
                return f"an event with op '{op}' needs '{part}'{hint}"
            problem = None if value is None else \
                fields_problem(value, self.schema, False, "the value")
            if problem is not None:
                return f"{part}: {problem}"
        return None
