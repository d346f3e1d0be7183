"""The ``raw`` payload format: the message bytes are the single column's value."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.errors import CatalogError, DataError
from flowsql.runtime.connectors.kafka.formats import payload_format


def where(i: int) -> str:
    return f"topic 'logs' partition 2 offset {10 + i}"


def test_string_column() -> None:
    schema = pa.schema([("line", pa.string())])
    decoded = payload_format("raw", schema, {"raw.charset": "UTF-8"}).decode(
        [b"GET /index.html 200", None, b"", "naïve".encode()], where)
    assert decoded.batch.schema == schema
    assert decoded.batch.column(0).to_pylist() == ["GET /index.html 200", None, "", "naïve"]
    assert decoded.messages.tolist() == [0, 1, 2, 3]
    assert decoded.kinds is None and decoded.skipped == 0


def test_bytes_column_takes_anything() -> None:
    schema = pa.schema([("payload", pa.binary())])
    decoded = payload_format("raw", schema, {}).decode([b"\xff\x00", None], where)
    assert decoded.batch.column(0).to_pylist() == [b"\xff\x00", None]


def test_invalid_utf8_names_the_message() -> None:
    schema = pa.schema([("line", pa.string())])
    with pytest.raises(DataError, match=r"^topic 'logs' partition 2 offset 12: raw: the "
                                        r"message is not valid UTF-8$"):
        payload_format("raw", schema, {}).decode([b"ok", None, b"\xc3(", b"\xff"], where)


def test_schema_and_charset_are_checked() -> None:
    with pytest.raises(CatalogError, match="exactly one column, not 2"):
        payload_format("raw", pa.schema([("a", pa.string()), ("b", pa.string())]), {})
    with pytest.raises(CatalogError, match="STRING or BYTES column, not 'n' BIGINT"):
        payload_format("raw", pa.schema([("n", pa.int64())]), {})
    with pytest.raises(CatalogError, match="'key.raw.charset': only UTF-8"):
        payload_format("raw", pa.schema([("k", pa.string())]), {"key.raw.charset": "UTF-16"},
                       "key.")
