"""Flink's ``csv`` format: one CSV record per message, fields in column order.

Options: ``csv.field-delimiter`` (default ','), ``csv.quote-character`` (default '"'),
``csv.disable-quote-character``, ``csv.escape-character`` (none by default),
``csv.null-literal`` and ``csv.ignore-parse-errors``. Values read as the filesystem
connector reads CSV files: without a null literal an empty field of a non-string column
is NULL and an empty string field is ''; with one, that literal is NULL in every column
(a quoted field never is). BYTES travel as base64, as Flink writes them. A message that is
not exactly one record of as many fields as the table has columns, or a field that does
not fit its column, is bad. A trailing line break ends a record and is no part of it.

Messages are joined into one text and parsed by one ``pyarrow.csv.read_csv``; only when
some message holds a line break inside a (quoted) value is Arrow told to expect them.
Writing uses Arrow's CSV writer, which quotes with '"' (a table with another quote
character cannot be written), one line per row without the line break.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence

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
from flowsql.runtime.connectors.kafka.formats.json_values import check_json_types
from flowsql.runtime.connectors.kafka.formats.options import FormatOptions

_MIN_BLOCK = 1 << 20


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
        # every record ends with a line break: an empty last message is still a record
        data = b"\n".join(payloads) + b"\n"
        parse = self._parse
        if data.count(b"\n") != len(payloads) or b"\r" in data:
            payloads = [p.rstrip(b"\r\n") for p in payloads]
            data = b"\n".join(payloads) + b"\n"
            if data.count(b"\n") != len(payloads) or b"\r" in data:
                parse = self._multiline
                if len(payloads) > 1 and not self._quotes_balanced(payloads):
                    raise BadBlock("a message may hold part of a quoted value")
        null_values = [self.null_literal] if self.null_literal is not None else [""]
        table = pcsv.read_csv(
            io.BytesIO(data),
            read_options=pcsv.ReadOptions(
                column_names=schema.names,
                block_size=max(_MIN_BLOCK, 2 * max(map(len, payloads)) + 2)),
            parse_options=parse,
            convert_options=pcsv.ConvertOptions(
                column_types={f.name: _read_type(f.type) for f in schema},
                null_values=null_values, strings_can_be_null=self.null_literal is not None,
                quoted_strings_can_be_null=False))
        if table.num_rows != len(payloads):
            raise BadBlock("a message holds no CSV record or several")
        batch = table.combine_chunks().to_batches()[0] if table.num_rows else \
            pa.RecordBatch.from_pylist([], table.schema)
        if self.null_literal is None:
            batch = _empty_as_null(batch, schema)
        columns = [base64_decode(c) if pa.types.is_binary(f.type) else c
                   for c, f in zip(batch.columns, schema)]
        batch = _convert_late(pa.RecordBatch.from_arrays(columns, names=schema.names),
                              schema, "")
        return pa.RecordBatch.from_arrays(batch.columns, schema=schema)

    def _quotes_balanced(self, payloads: list[bytes]) -> bool:
        """Whether no quoted value can run from one message into the next, when values
        may hold line breaks. Every line is a row (empty lines included), so then each
        message gives at least one row, and as many rows as messages means one each.
        With an escape character quotes cannot be counted: such blocks are parsed one
        message at a time."""
        if self.quote is None:
            return True
        if self.escape is not None:
            return False
        quote = self.quote.encode()
        return not any(p.count(quote) % 2 for p in payloads)

    def problem(self, payload: bytes) -> str | None:
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            return "the message is not UTF-8"
        try:
            records = list(csv.reader(
                io.StringIO(text.rstrip("\r\n"), newline=""), delimiter=self.delimiter,
                quotechar=self.quote, escapechar=self.escape,
                quoting=csv.QUOTE_MINIMAL if self.quote else csv.QUOTE_NONE))
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


def _read_type(t: pa.DataType) -> pa.DataType:
    return T.STRING if pa.types.is_binary(t) else _parse_type(t)


def _csv_text(batch: pa.RecordBatch, options: pcsv.WriteOptions) -> bytes:
    sink = io.BytesIO()
    pcsv.write_csv(batch, sink, write_options=options)
    return sink.getvalue()
