"""Table columns as JSON values, both ways, a whole batch at a time (json, debezium-json).

Reading: payloads are joined into newline-delimited JSON and parsed by one
``pyarrow.json.read_json`` against an explicit schema; unknown keys are ignored, a key the
message lacks is NULL. Types follow Flink's json format and the filesystem connector's
JSON reading: numbers for numeric columns (an integer column takes no fraction, a decimal
no more digits than its scale -- Flink would round), ``true``/``false`` for BOOLEAN, and
strings for STRING, DATE (``2024-01-31``), TIMESTAMP and TIMESTAMP_LTZ (Flink's SQL form
``2024-01-31 12:00:00[.fraction]`` or ISO-8601 ``2024-01-31T12:00:00[.fraction][Z]``, up to
microseconds unless the column holds nanoseconds) and BYTES (base64). A value of the wrong
JSON type (``"12"`` for an INT, which Flink would accept) is bad.

Writing: one object per row, a key per column in column order, NULL as ``null``; numbers
exact, dates and timestamps as the SQL strings the filesystem sink writes
(``2024-01-31 12:00:00.000``, with a ``Z`` for TIMESTAMP_LTZ), BYTES as base64.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pjson

from flowsql.errors import CatalogError, ExecutionError
from flowsql.planner import types as T
from flowsql.runtime.connectors.kafka.formats.base64_arrays import base64_decode, base64_encode
from flowsql.runtime.connectors.kafka.formats.decoding import BadBlock
from flowsql.runtime.expressions.casts import converter

#: the smallest block read_json is given; a larger one is needed for a longer payload (a
#: record must fit in one block)
_MIN_BLOCK = 1 << 20


def check_json_types(schema: pa.Schema, fmt: str) -> None:
    """CatalogError for a column type JSON cannot carry."""
    for f in schema:
        t = f.type
        if not (pa.types.is_boolean(t) or T.is_numeric(t) or T.is_string(t)
                or pa.types.is_binary(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)):
            raise CatalogError(f"the {fmt} format cannot carry column '{f.name}' of type "
                               f"{T.sql_name(t)}")


def parse_type(t: pa.DataType) -> pa.DataType:
    """The type read_json reads a column as, before ``convert_column``."""
    if pa.types.is_date(t) or T.is_string(t):
        return T.STRING
    if pa.types.is_timestamp(t) and t.unit != "ns":
        return pa.timestamp("us", t.tz)  # sub-unit digits are accepted, then truncated
    return t


def parse_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, parse_type(f.type)) for f in schema])


def convert_column(column: pa.Array, target: pa.DataType) -> pa.Array:
    """A column as read_json parsed it -> the table's type; raises on a bad value."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_binary(target):
        return base64_decode(column)
    if T.is_string(target):
        column.validate(full=True)  # read_json does not check UTF-8
        return column.cast(target)
    if pa.types.is_date(target):
        return converter(T.STRING, target)(column)
    if pa.types.is_timestamp(target) and not column.type.equals(target):
        return pc.cast(column, target, safe=False)
    return column


def read_ndjson(payloads: Sequence[bytes], schema: pa.Schema) -> pa.Table:
    """One row per payload, read at once against ``schema``; BadBlock when a payload holds
    no JSON value or several, or is ``null``.

    The payloads become the lines of one text. Raw CR and LF inside a JSON document can
    only be whitespace, so they are made spaces (Arrow would break lines at them). A line
    that is empty, blank or starts with ``null`` is refused before Arrow sees it: blank
    lines give no row (and would let a message holding two documents go unnoticed, the
    row count still matching) and pyarrow's read_json crashes the process when one of its
    blocks starts with ``null``. Every other line gives at least one row or an error, so
    as many rows as payloads means one row each.
    """
    data = b"\n".join(payloads)
    if b"\r" in data:
        data = data.replace(b"\r", b" ")
    chars = np.frombuffer(data, dtype=np.uint8)
    breaks = np.flatnonzero(chars == _NEWLINE)
    if len(breaks) != len(payloads) - 1:
        data = b"\n".join(p.replace(b"\n", b" ").replace(b"\r", b" ") for p in payloads)
        chars = np.frombuffer(data, dtype=np.uint8)
        breaks = np.flatnonzero(chars == _NEWLINE)
    starts = np.concatenate([[0], breaks + 1])
    ends = np.append(breaks, len(data))
    if (ends == starts).any():
        raise BadBlock("a message is empty")
    if (chars[starts] == _BOM[0]).any():
        # Flink's reader skips a message's UTF-8 byte order mark, Arrow only the text's
        data = (b"\n" + data).replace(b"\n" + _BOM, b"\n   ")[1:]
        chars = np.frombuffer(data, dtype=np.uint8)
    # only lines starting with white space or 'n' can be blank or null: looked at one by one
    for line in np.flatnonzero(_SUSPECT_FIRST[chars[starts]]):
        text = data[starts[line]:ends[line]].lstrip(b" \t")
        if not text or text.startswith(b"null"):
            raise BadBlock("a message is blank or JSON null")
    block = max(_MIN_BLOCK, 2 * int((ends - starts).max()) + 2)
    table = pjson.read_json(io.BytesIO(data), read_options=pjson.ReadOptions(block_size=block),
                            parse_options=pjson.ParseOptions(
                                explicit_schema=schema, unexpected_field_behavior="ignore"))
    if table.num_rows != len(payloads):
        raise BadBlock("a message holds several JSON documents")
    return table


_NEWLINE = ord("\n")
_BOM = "\ufeff".encode()
_SUSPECT_FIRST = np.zeros(256, dtype=bool)
_SUSPECT_FIRST[[ord(c) for c in "n \t"]] = True



def value_problem(name: str, value: object, target: pa.DataType) -> str | None:
    """Why ``value`` (from ``json.loads``) cannot be column ``name``'s, or None: the very
    reading the fast path does, on a one-key document (the error path only)."""
    if value is None:
        return None
    document = json.dumps({name: value}).encode()
    try:
        table = read_ndjson([document], pa.schema([pa.field(name, parse_type(target))]))
        convert_column(table.column(0), target)
    except (pa.ArrowException, ValueError, ExecutionError):
        shown = json.dumps(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return f"field '{name}' expects {T.sql_name(target)}, got {shown}"
    return None


_DATE = re.compile(r"\s*\d{4}-\d{2}-\d{2}\s*")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?"
                        r"(Z|[+-]\d{2}(:?\d{2})?)?")


def wrong_value_guess(target: pa.DataType) -> Callable[[object], bool]:
    """A quick guess whether a value (from ``json.loads``) cannot be ``target``'s: it only
    steers the search for bad messages (see ``decoding``), so it may err either way."""
    if pa.types.is_boolean(target):
        return lambda v: v is not None and not isinstance(v, bool)
    if T.is_integer(target):
        half = 1 << (target.bit_width - 1)
        return lambda v: v is not None and (isinstance(v, bool) or not isinstance(v, int)
                                            or not -half <= v < half)
    if T.is_float(target):
        return lambda v: v is not None and (isinstance(v, bool)
                                            or not isinstance(v, int | float))
    if T.is_decimal(target):
        return lambda v: v is not None and (isinstance(v, bool)
                                            or not isinstance(v, int | float | str))
    if pa.types.is_binary(target):
        return lambda v: v is not None and (not isinstance(v, str) or len(v) % 4 != 0)
    if pa.types.is_date(target):
        return lambda v: v is not None and (not isinstance(v, str)
                                            or _DATE.fullmatch(v) is None)
    if pa.types.is_timestamp(target):
        return lambda v: v is not None and (not isinstance(v, str)
                                            or _TIMESTAMP.fullmatch(v) is None)
    return lambda v: v is not None and not isinstance(v, str)


# -- writing --------------------------------------------------------------------------------

_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def json_strings(text: pa.Array) -> pa.Array:
    """Each string as a JSON string literal (quoted, escaped)."""
    text = pc.replace_substring(text, "\\", "\\\\")
    text = pc.replace_substring(text, '"', '\\"')
    if pc.any(pc.match_substring_regex(text, r"[\x00-\x1f]")).as_py():
        for code in range(32):
            char = chr(code)
            escape = _CONTROL_ESCAPES.get(char, f"\\u{code:04x}")
            text = pc.replace_substring(text, char, escape)
    return pc.binary_join_element_wise('"', text, '"', "")


def json_values(column: pa.Array) -> pa.Array:
    """Each value's JSON text (string), ``null`` for NULL."""
    t = column.type
    if T.is_integer(t) or T.is_decimal(t) or pa.types.is_boolean(t):
        text = pc.cast(column, T.STRING)  # Arrow's decimal text ('1.50') is a JSON number
    elif T.is_float(t):
        if pc.all(pc.is_finite(column)).as_py() is False:
            raise ExecutionError("JSON cannot represent NaN or infinite values")
        text = pc.cast(column, T.STRING)
    elif pa.types.is_binary(t):
        text = json_strings(base64_encode(column))
    elif T.is_string(t) or T.is_temporal(t):
        text = json_strings(pc.cast(column, T.STRING))
    else:
        raise ExecutionError(f"JSON cannot represent {T.sql_name(t)} values")
    return pc.fill_null(text, "null")


def json_objects(batch: pa.RecordBatch) -> pa.Array:
    """Each row as one JSON object (string), keys in column order."""
    parts: list[pa.Array | str] = []
    for index, (name, column) in enumerate(zip(batch.schema.names, batch.columns)):
        parts.append(("{" if index == 0 else ",") + json.dumps(name) + ":")
        parts.append(json_values(column))
    parts.append("}")
    if batch.num_columns == 0:
        return pa.array(["{}"] * batch.num_rows, T.STRING)
    return pc.binary_join_element_wise(*parts, "")


def as_payloads(text: pa.Array) -> list[bytes | None]:
    """The UTF-8 bytes of each string."""
    return pc.cast(text, pa.binary()).to_pylist()
