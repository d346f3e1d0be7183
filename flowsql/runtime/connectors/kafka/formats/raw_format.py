"""Flink's ``raw`` format: the message bytes are the value of the only column.

The table (or its key or value part) has exactly one column, STRING or BYTES. A ``None``
payload (a tombstone) is a NULL value and a NULL value is written as a ``None`` payload.
``raw.charset`` must be UTF-8 (the default); a STRING value that is not valid UTF-8 is
bad (Flink would pass the bytes on unchecked). ``raw.endianness`` only matters for
numeric columns, which this format does not take.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from flowsql.errors import CatalogError, DataError
from flowsql.planner import types as T
from flowsql.runtime.connectors.kafka.formats.decoding import Decoded
from flowsql.runtime.connectors.kafka.formats.options import FormatOptions

_UTF8 = {"utf-8", "utf8"}


class RawFormat:
    label = "raw"
    changelog = False

    def __init__(self, schema: pa.Schema, options: FormatOptions) -> None:
        if len(schema) != 1:
            raise CatalogError(f"the raw format needs exactly one column, not {len(schema)} "
                               f"({', '.join(schema.names)})")
        column = schema.field(0)
        if not (T.is_string(column.type) or pa.types.is_binary(column.type)):
            raise CatalogError(f"the raw format needs a STRING or BYTES column, not "
                               f"'{column.name}' {T.sql_name(column.type)}")
        charset = options.text("charset")
        if charset is not None and charset.strip().lower() not in _UTF8:
            raise CatalogError(f"option '{options.key('charset')}': only UTF-8 is supported, "
                               f"not '{charset}'")
        self.schema = schema

    def decode(self, payloads: Sequence[bytes | None], where: Callable[[int], str]
               ) -> Decoded:
        values = pa.array(payloads, pa.binary())
        target = self.schema.field(0).type
        if T.is_string(target):
            try:
                values = values.cast(target)
            except pa.ArrowInvalid:
                bad = next(i for i, p in enumerate(payloads)
                           if p is not None and not _is_utf8(p))
                raise DataError(f"{where(bad)}: raw: the message is not valid UTF-8"
                                ) from None
        batch = pa.RecordBatch.from_arrays([values], schema=self.schema)
        return Decoded(batch, np.arange(len(payloads), dtype=np.int64), None, 0)

    def encode(self, batch: pa.RecordBatch) -> list[bytes | None]:
        return batch.column(0).cast(pa.binary()).to_pylist()


def _is_utf8(payload: bytes) -> bool:
    try:
        payload.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
