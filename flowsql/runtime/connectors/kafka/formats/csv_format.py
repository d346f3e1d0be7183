"""Flink's ``csv`` format: one CSV record per message, fields in column order.

Options: ``csv.field-delimiter`` (default ','), ``csv.quote-character`` (default '"'),
``csv.disable-quote-character``, ``csv.escape-character`` (none by default),
``csv.null-literal`` and ``csv.ignore-parse-errors``. Values read as the filesystem
connector reads CSV files: without a null literal an empty field of a non-string column
is NULL and an empty STRING or BYTES field is empty; with one, that literal is NULL in
every column (a quoted field never is). BYTES travel as base64, as Flink writes them. A
message that is not exactly one record of as many fields as the table has columns, whose
quote characters do not pair up, or with a field that does not fit its column, is bad. A
trailing line break ends a record and is no part of it.

Messages are joined into one text and parsed by one ``pyarrow.csv.read_csv``; only when
some message holds a line break inside a (quoted) value is Arrow told to expect them.
Writing uses Arrow's CSV writer, which quotes with '"' (a table with another quote
character cannot be written), one line per row without the line break.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal, InvalidOperation

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv

from flowsql.errors import CatalogError
from flowsql.planner import types as T
from flowsql.runtime.connectors.filesystem import _convert_late, _empty_as_null, _parse_type
from flowsql.runtime.connectors.kafka.formats.base64_arrays import base64_decode, base64_encode
from flowsql.runtime.connectors.kafka.formats.decoding import (
    BadBlock,
    Decoded,
    Rows,
    all_rows,
    decode_payloads,
)
from flowsql.runtime.connectors.kafka.formats.json_values import check_json_types, wrong_value_guess
from flowsql.runtime.connectors.kafka.formats.options import FormatOptions

_MIN_BLOCK = 1 << 20
_NEWLINE = ord("\n")


class CsvFormat:
    label = "csv"
    changelog = False

    def __init__(self, schema: pa.Schema, options: FormatOptions) -> None:
        check_json_types(schema, self.label)  # the same types as json
        self.schema = schema
        self.delimiter = options.character("field-delimiter", ",") or ","
        quote = options.character("quote-character", '"')
        self.quote = None if options.flag("disable-quote-character") else quote
        self.escape = options.character("escape-character", None)
        self.null_literal = options.text("null-literal")
        self.ignore_errors = options.flag("ignore-parse-errors")
        self._guesses = [_wrong_text_guess(f.type) for f in schema]
        self._parse = pcsv.ParseOptions(
            delimiter=self.delimiter, quote_char=self.quote or False,
            escape_char=self.escape or False, ignore_empty_lines=False)
        self._multiline = pcsv.ParseOptions(
            delimiter=self.delimiter, quote_char=self.quote or False,
            escape_char=self.escape or False, ignore_empty_lines=False,
            newlines_in_values=True)

    def decode(self, payloads: Sequence[bytes | None], where: Callable[[int], str]
               ) -> Decoded:
        return decode_payloads(payloads, where, self, self.ignore_errors)

    # -- reading ----------------------------------------------------------------------------

    def parse(self, payloads: list[bytes]) -> Rows:
        batch = self._read(payloads, self.schema)
        return Rows(batch, np.arange(batch.num_rows), None, all_rows(batch.num_rows))

    def _read(self, payloads: list[bytes], schema: pa.Schema) -> pa.RecordBatch:
        data, multiline = self._text(payloads, schema)
        null_values = [self.null_literal] if self.null_literal is not None else [""]
        table = pcsv.read_csv(
            io.BytesIO(data),
            read_options=pcsv.ReadOptions(
                column_names=schema.names,
                block_size=max(_MIN_BLOCK, 2 * max(map(len, payloads)) + 2)),
            parse_options=self._multiline if multiline else self._parse,
            convert_options=pcsv.ConvertOptions(
                column_types={f.name: _read_type(f.type) for f in schema},
                null_values=null_values, strings_can_be_null=self.null_literal is not None,
                quoted_strings_can_be_null=False))
        if table.num_rows != len(payloads):
            raise BadBlock("a message holds several CSV records")
        batch = table.combine_chunks().to_batches()[0] if table.num_rows else \
            pa.RecordBatch.from_pylist([], table.schema)
        if self.null_literal is None:  # BYTES are text here: empty is b'', as for strings
            batch = _empty_as_null(batch, pa.schema(
                [pa.field(f.name, T.STRING if pa.types.is_binary(f.type) else f.type)
                 for f in schema]))
        columns = [base64_decode(c) if pa.types.is_binary(f.type) else c
                   for c, f in zip(batch.columns, schema)]
        batch = _convert_late(pa.RecordBatch.from_arrays(columns, names=schema.names),
                              schema, "")
        return pa.RecordBatch.from_arrays(batch.columns, schema=schema)

    def _text(self, payloads: list[bytes], schema: pa.Schema) -> tuple[bytes, bool]:
        """The messages as lines of one CSV text, and whether values hold line breaks.

        Arrow turns every line into a row, an empty one too, and parses lines on their
        own, tolerating a quote left open at a line's end. So a message is refused here
        when its quotes do not pair up (Flink's reader fails on it; across messages it
        would also let one quoted value run into the next message) and, for tables of
        several columns, when it is empty. Then each message gives at least one row, and
        as many rows as messages means one each. With an escape character quotes cannot
        be counted: blocks whose values hold line breaks are then read message by message.
        """
        # every record ends with a line break: an empty last message is still a record
        data = b"\n".join(payloads) + b"\n"
        chars = np.frombuffer(data, dtype=np.uint8)
        breaks = np.flatnonzero(chars == _NEWLINE)
        multiline = len(breaks) != len(payloads) or b"\r" in data
        if multiline:
            payloads = [p.rstrip(b"\r\n") for p in payloads]
            data = b"\n".join(payloads) + b"\n"
            chars = np.frombuffer(data, dtype=np.uint8)
            breaks = np.flatnonzero(chars == _NEWLINE)
            multiline = len(breaks) != len(payloads) or b"\r" in data
        if multiline and self.escape is not None and len(payloads) > 1:
            raise BadBlock("values with line breaks and an escape character")
        if len(schema) > 1:
            lengths = [len(p) for p in payloads] if multiline else \
                np.diff(breaks, prepend=-1) - 1
            if not np.all(lengths):
                raise BadBlock("a message is empty")
        if self.quote is not None and self.escape is None and self.quote.encode() in data:
            quote = self.quote.encode()
            if multiline:
                odd = any(p.count(quote) % 2 for p in payloads)
            else:
                # quotes before each line's end, from the quotes' positions
                before_end = np.searchsorted(np.flatnonzero(chars == ord(quote)), breaks)
                odd = bool((np.diff(before_end, prepend=0) % 2).any())
            if odd:
                raise BadBlock("a message's quotes do not pair up")
        return data, multiline

    def suspects(self, payloads: list[bytes]) -> np.ndarray:
        return np.array([self._looks_wrong(p) for p in payloads], dtype=bool)

    def _looks_wrong(self, payload: bytes) -> bool:
        try:
            text = payload.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            return True
        if not text:
            return len(self.schema) > 1
        if self.quote is not None and self.escape is None and text.count(self.quote) % 2:
            return True
        try:
            records = list(self._records(text))
        except csv.Error:
            return True
        if len(records) != 1 or len(records[0]) != len(self.schema):
            return True
        return any(value != "" and value != self.null_literal and wrong(value)
                   for wrong, value in zip(self._guesses, records[0]))

    def _records(self, text: str) -> Iterator[list[str]]:
        return csv.reader(io.StringIO(text, newline=""), delimiter=self.delimiter,
                          quotechar=self.quote, escapechar=self.escape,
                          quoting=csv.QUOTE_MINIMAL if self.quote else csv.QUOTE_NONE)

    def problem(self, payload: bytes) -> str | None:
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            return "the message is not UTF-8"
        if not text.rstrip("\r\n"):
            return "the message is empty"
        if self.quote is not None and self.escape is None and text.count(self.quote) % 2:
            return f"its quote characters ({self.quote}) do not pair up"
        try:
            records = list(self._records(text.rstrip("\r\n")))
        except csv.Error as e:
            return f"invalid CSV ({e})"
        if len(records) != 1:
            return f"expected one CSV record, found {len(records)}"
        fields = records[0]
        if len(fields) != len(self.schema):
            return f"expected {len(self.schema)} fields, found {len(fields)}"
        for f, value in zip(self.schema, fields):
            try:
                self._read([self._field_text(value)], pa.schema([f]))
            except (pa.ArrowException, ValueError):
                return f"field '{f.name}' expects {T.sql_name(f.type)}, got '{value}'"
        return None

    def _field_text(self, value: str) -> bytes:
        special = any(c in value for c in (self.delimiter, "\n", "\r", self.quote or ""))
        if special and self.quote:
            value = self.quote + value.replace(self.quote, self.quote * 2) + self.quote
        return value.encode("utf-8")

    # -- writing ----------------------------------------------------------------------------

    def encode(self, batch: pa.RecordBatch) -> list[bytes | None]:
        if self.quote not in ('"', None):
            raise CatalogError(f"the csv format can only write with the quote character "
                               f"'\"', not '{self.quote}'")
        columns = [base64_encode(c) if pa.types.is_binary(c.type) else c
                   for c in batch.columns]
        batch = pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
        if self.null_literal is None:
            options = pcsv.WriteOptions(include_header=False, delimiter=self.delimiter)
        else:
            # every value quoted, so a string equal to the literal stays a string
            options = pcsv.WriteOptions(include_header=False, delimiter=self.delimiter,
                                        null_string=self.null_literal,
                                        quoting_style="all_valid")
        lines = _csv_text(batch, options).split(b"\n")[:-1]
        if len(lines) == batch.num_rows:
            return list(lines)
        # a value holds a line break: the lines do not tell the rows apart
        return [_csv_text(batch.slice(row, 1), options)[:-1] for row in range(batch.num_rows)]


_INTEGER = re.compile(r"\s*[+-]?\d+\s*")
_BOOLEANS = {"true", "false", "t", "f", "yes", "no", "y", "n", "1", "0"}


def _wrong_text_guess(target: pa.DataType) -> Callable[[str], bool]:
    """A quick guess whether a field's text cannot be ``target``'s (see ``suspects``)."""
    if T.is_string(target):
        return lambda text: False
    if T.is_integer(target):
        return lambda text: _INTEGER.fullmatch(text) is None
    if T.is_float(target) or T.is_decimal(target):
        return _not_a_number
    if pa.types.is_boolean(target):
        return lambda text: text.strip().lower() not in _BOOLEANS
    return wrong_value_guess(target)


def _not_a_number(text: str) -> bool:
    try:
        Decimal(text.strip())
    except InvalidOperation:
        return True
    return False


def _read_type(t: pa.DataType) -> pa.DataType:
    return T.STRING if pa.types.is_binary(t) else _parse_type(t)


def _csv_text(batch: pa.RecordBatch, options: pcsv.WriteOptions) -> bytes:
    sink = io.BytesIO()
    pcsv.write_csv(batch, sink, write_options=options)
    return sink.getvalue()
