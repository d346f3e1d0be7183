"""Building and reshaping record batches by position, as every operator needs.

Inside the engine column ``i`` of a batch is field ``i`` of the producing node's schema;
names may repeat (``SELECT a, a``), so nothing here looks a column up by name. Tables handed
to pyarrow APIs that do address columns by name (joins, group-by) get generated, unique
names from :func:`internal_names`.

A batch or table without columns still has a row count (``SELECT count(*)`` over a pruned
scan, ``SELECT 1`` without FROM); pyarrow drops that count in several operations (``take``,
``from_arrays``), so the helpers here carry it explicitly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

from flowsql.planner.config.settings import SettingValues
from flowsql.planner.schema import Schema


def internal_names(n: int, prefix: str = "c") -> list[str]:
    """Unique column names for tables passed to name-addressed pyarrow APIs."""
    return [f"{prefix}{i}" for i in range(n)]


def _empty_rows(num_rows: int) -> pa.RecordBatch:
    return pa.record_batch([pa.nulls(num_rows)], names=["_"]).select([])


def conform(array: pa.Array | pa.ChunkedArray, dtype: pa.DataType) -> pa.Array:
    """``array`` as one contiguous array of ``dtype`` (cast only when the type differs)."""
    if isinstance(array, pa.ChunkedArray):
        array = (array.combine_chunks() if array.num_chunks != 1 else array.chunk(0))
    if pa.types.is_null(dtype) and not pa.types.is_null(array.type):
        return pa.nulls(len(array))  # only all-NULL columns are typed NULL; no cast exists
    if not array.type.equals(dtype):
        array = array.cast(dtype)
    return array


def make_batch(arrays: Sequence[pa.Array | pa.ChunkedArray], schema: Schema,
               num_rows: int) -> pa.RecordBatch:
    """A batch of ``schema`` from one array per field, cast to the field types."""
    if not schema:
        return _empty_rows(num_rows)
    columns = [conform(a, f.dtype) for a, f in zip(arrays, schema)]
    return pa.RecordBatch.from_arrays(columns, names=[f.name for f in schema])


def empty_batch(schema: Schema) -> pa.RecordBatch:
    return make_batch([pa.array([], type=f.dtype) for f in schema], schema, 0)


def to_table(batches: Iterable[pa.RecordBatch], width: int, prefix: str = "c") -> pa.Table:
    """Concatenate batches of one schema into a table with :func:`internal_names`.

    Zero-column batches keep their total row count.
    """
    names = internal_names(width, prefix)
    renamed = [pa.RecordBatch.from_arrays(b.columns, names=names) if width else b
               for b in batches]
    if not renamed:
        if width:
            raise ValueError("to_table needs the column types of an empty input")
        return pa.Table.from_batches([_empty_rows(0)])
    return pa.Table.from_batches(renamed)


def take_rows(table: pa.Table, indices: pa.Array | np.ndarray) -> pa.Table:
    """``table.take`` that keeps the row count of a zero-column table."""
    if table.num_columns == 0:
        return pa.Table.from_batches([_empty_rows(len(indices))])
    return table.take(indices)


def table_to_batches(table: pa.Table, schema: Schema, batch_size: int) -> list[pa.RecordBatch]:
    """Split ``table`` (columns by position) into batches of ``schema`` of at most
    ``batch_size`` rows; an empty table gives no batch."""
    if table.num_rows == 0:
        return []
    if table.num_columns == 0:
        sizes = [min(batch_size, table.num_rows - s) for s in range(0, table.num_rows, batch_size)]
        return [_empty_rows(n) for n in sizes]
    out = []
    for start in range(0, table.num_rows, batch_size):
        part = table.slice(start, batch_size)
        out.append(make_batch(part.columns, schema, part.num_rows))
    return out


def batch_nbytes(batch: pa.RecordBatch | pa.Table) -> int:
    """Bytes accounted against the memory budget for a held batch."""
    return int(batch.nbytes)


def batch_size(settings: dict[str, str]) -> int:
    """Rows per emitted batch (``execution.batch-size``)."""
    return SettingValues(settings).integer("execution.batch-size")


def positional(columns: Sequence[pa.Array | pa.ChunkedArray], num_rows: int) -> pa.Table:
    """Columns by position as a table with :func:`internal_names` (a zero-column table
    keeps ``num_rows``)."""
    if not columns:
        return pa.Table.from_batches([_empty_rows(num_rows)])
    return pa.table(list(columns), names=internal_names(len(columns)))
