"""``flowsql nexmark gen``: the events of a generator configuration as files, one directory
per table (``DIR/person``, ``DIR/auction``, ``DIR/bid``), so another engine can read exactly
the events the ``nexmark`` connector generates (same seed and options: same rows, in
event-number order).

Formats: ``parquet`` (``part-0.parquet``) and ``json`` (``part-0.json``: newline-delimited
JSON, one object per event with the columns by name; timestamps as ``'yyyy-MM-dd
HH:mm:ss.SSS'`` strings, the form Flink's ``json`` format reads by default
(``json.timestamp-format.standard`` = ``SQL``); NULL as ``null``). The JSON text is
built column by column with Arrow compute kernels, never row by row."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from flowsql.nexmark.generator import KINDS, SCHEMAS, GeneratorConfig, NexmarkGenerator

#: event numbers generated per step (bounds the memory a large run needs)
CHUNK_EVENTS = 1_000_000
#: what ``generate_files`` can write
FORMATS = ("parquet", "json")
#: a JSON timestamp: Flink's SQL timestamp form with milliseconds
_TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"  # %S of a millisecond timestamp carries ".SSS"


def generate_files(config: GeneratorConfig, out: str | Path,
                   format: str = "parquet") -> dict[str, int]:
    """Write ``config``'s events (``config.events`` must be set) under ``out`` in
    ``format`` (one of ``FORMATS``); returns the rows written per table."""
    if config.events is None:
        raise ValueError("generate_files needs a bounded event count")
    if format not in FORMATS:
        raise ValueError(f"format is one of {', '.join(FORMATS)}, not {format!r}")
    generator = NexmarkGenerator(config)
    rows: dict[str, int] = {}
    for kind in KINDS:
        directory = Path(out) / kind
        directory.mkdir(parents=True, exist_ok=True)
        batches = (generator.generate(kind, start, min(start + CHUNK_EVENTS, config.events))
                   for start in range(0, config.events, CHUNK_EVENTS))
        if format == "parquet":
            rows[kind] = _write_parquet(directory / "part-0.parquet", SCHEMAS[kind], batches)
        else:
            with open(directory / "part-0.json", "wb") as sink:
                rows[kind] = sum(_write_json_lines(sink, batch) for batch in batches)
    return rows


def _write_parquet(path: Path, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> int:
    written = 0
    with pq.ParquetWriter(path, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
            written += batch.num_rows
    return written


def _write_json_lines(sink: BinaryIO, batch: pa.RecordBatch) -> int:
    """Append ``batch`` to ``sink`` as one JSON object per line; returns its row count."""
    if not batch.num_rows:
        return 0
    pieces: list[pa.Array | str] = []
    for i, field in enumerate(batch.schema):
        pieces.append(("{" if i == 0 else ",") + json.dumps(field.name) + ":")
        pieces.append(json_values(batch.column(i)))
    lines = pc.binary_join_element_wise(*pieces, "}\n", "")
    sink.write(_concatenated(lines))
    return batch.num_rows


def json_values(column: pa.Array) -> pa.Array:
    """The JSON text of each value of ``column`` (integers, strings, timestamps)."""
    kind = column.type
    if pa.types.is_integer(kind):
        text = pc.cast(column, pa.string())
    elif pa.types.is_timestamp(kind):
        text = _quoted(pc.strftime(column, format=_TIMESTAMP_FORMAT))
    elif pa.types.is_string(kind):
        text = _quoted(_escaped(column))
    else:
        raise TypeError(f"no JSON form for a {kind} column")
    return pc.fill_null(text, "null")


def _quoted(text: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise('"', text, '"', "")


def _escaped(text: pa.Array) -> pa.Array:
    """``text`` with what JSON strings must escape escaped: the backslash, the quote and
    the control characters below U+0020."""
    text = pc.replace_substring(text, "\\", "\\\\")
    text = pc.replace_substring(text, '"', '\\"')
    if pc.any(pc.match_substring_regex(text, "[\\x00-\\x1f]")).as_py():
        for code in range(0x20):
            text = pc.replace_substring(text, chr(code), f"\\u{code:04x}")
    return text


def _concatenated(lines: pa.Array) -> pa.Buffer:
    """The bytes of a string array's values one after the other (its data buffer, no
    copy)."""
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
    first, last = int(offsets[lines.offset]), int(offsets[lines.offset + len(lines)])
    return lines.buffers()[2].slice(first, last - first)
