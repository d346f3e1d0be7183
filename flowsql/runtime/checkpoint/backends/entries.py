"""State tables as key-value entries, one per key group, and back (pure, no I/O).

The rocksdb backend stores a snapshot as entries of a key-value store so that a checkpoint
rewrites only the key groups that changed. The encoding, for a state table named ``name``:

* ``<name>\\x00``: the table's schema as an Arrow IPC schema message, metadata included,
  so a state without rows reads back with its exact schema and state description;
* ``<name>\\x00<part>``, ``<part>`` a 4-byte big-endian unsigned integer: an Arrow IPC
  stream (the schema without the table's metadata, any dictionaries, one record batch;
  uncompressed: the store compresses its blocks) with the rows of one part. A table whose
  first column is the int32 ``__key_group`` column (keyed state, timers) has one part per
  key group present; any other table (list state) is one part, ``0``. Parts without rows
  have no entry.

A part's bytes depend only on its rows (and on the schema and dictionaries): each part is
copied into buffers of its own before it is written. A zero-copy slice would not do: its
validity bitmaps and buffers can carry bits of the neighbouring rows, so a change in one
key group would change the bytes of the next, and an incremental snapshot would rewrite it.

Big-endian parts make the store's bytewise key order the key-group order, so reading the
entries of a name in key order and concatenating them gives the table's rows ordered by key
group, stable within a key group. A keyed state snapshot is already in that order and reads
back identical; a timer snapshot (ordered by timestamp) reads back with the same rows in
key-group order, which ``TimerService.restore`` does not depend on.

State names must not contain ``\\x00``; key groups must fit an unsigned 32-bit integer.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.runtime.state import KEY_GROUP

SEPARATOR = b"\x00"
_PART_BYTES = 4


def schema_key(name: str) -> bytes:
    return _name_bytes(name) + SEPARATOR


def part_key(name: str, part: int) -> bytes:
    return _name_bytes(name) + SEPARATOR + part.to_bytes(_PART_BYTES, "big")


def is_key_grouped(schema: pa.Schema) -> bool:
    """Whether rows carry their key group in front (and are stored one entry per group)."""
    return (len(schema) > 0 and schema.field(0).name == KEY_GROUP
            and schema.field(0).type == pa.int32())


def table_entries(name: str, table: pa.Table) -> Iterator[tuple[bytes, pa.Buffer]]:
    """The entries of one state table, schema first, then parts in ascending order.

    Vectorized: rows are grouped with one stable sort (skipped when already sorted, as keyed
    snapshots are), and each part is a zero-copy slice serialized once."""
    yield schema_key(name), table.schema.serialize()
    if table.num_rows == 0:
        return
    batch = table.replace_schema_metadata(None).combine_chunks().to_batches()[0]
    if not is_key_grouped(table.schema):
        yield part_key(name, 0), _stream(batch)
        return
    groups = batch.column(0).to_numpy(zero_copy_only=False)
    if len(groups) and groups.min() < 0:
        raise ExecutionError(f"state '{name}' holds a negative key group")
    if np.any(groups[1:] < groups[:-1]):
        order = np.argsort(groups, kind="stable")
        batch = batch.take(pa.array(order))
        groups = groups[order]
    starts = np.flatnonzero(np.diff(groups)) + 1
    bounds = np.concatenate(([0], starts, [len(groups)]))
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        # concatenating one batch copies it into fresh, exactly sized buffers
        part = pa.concat_batches([batch.slice(start, stop - start)])
        yield part_key(name, int(groups[start])), _stream(part)


def tables_from_entries(entries: Iterable[tuple[bytes, bytes]]) -> dict[str, pa.Table]:
    """Inverse of ``table_entries`` over the entries of any number of tables, which must come
    in bytewise key order (a store's iteration order): per name the schema, then its parts."""
    schemas: dict[str, pa.Schema] = {}
    batches: dict[str, list[pa.RecordBatch]] = {}
    for key, value in entries:
        raw_name, separator, part = key.partition(SEPARATOR)
        name = raw_name.decode()
        if not separator or len(part) not in (0, _PART_BYTES):
            raise ExecutionError(f"state entry key {key!r} is not <name>\\x00[<part>]")
        if not part:
            schemas[name] = pa.ipc.read_schema(pa.py_buffer(value))
            batches[name] = []
            continue
        if name not in schemas:
            raise ExecutionError(f"state '{name}' has rows but no schema entry")
        batches[name].extend(pa.ipc.open_stream(pa.py_buffer(value)))
    return {name: pa.Table.from_batches(batches[name], schema)
            for name, schema in schemas.items()}


def _stream(batch: pa.RecordBatch) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue()


def _name_bytes(name: str) -> bytes:
    encoded = name.encode()
    if SEPARATOR in encoded:
        raise ExecutionError(f"state name {name!r} contains a NUL character")
    return encoded
