"""Changelog streams: how an updating result travels as Arrow batches.

A streaming operator's output is either *insert-only* (every row is a new fact: scans,
filters, window aggregates) or *updating* (rows may later be retracted: an unwindowed
GROUP BY, a regular outer join, Top-N). The planner knows which one every node produces
(its changelog mode), and batches follow it:

* insert-only batches have exactly the plan schema's columns;
* updating batches have the plan schema's columns followed by one more int8 column,
  ``ROW_KIND``, holding each row's kind -- the four kinds of Flink's ``RowKind``:
  ``+I`` insert, ``-U`` the old value of an update, ``+U`` its new value, ``-D`` delete.

Row kinds are data, not metadata, so filters, projections and exchanges carry them
without knowing what they mean, and a batch keeps the order of changes within it. A
consumer that materializes an updating stream (``materialize``) applies the changes in
order: ``+I``/``+U`` add a row, ``-U``/``-D`` remove one equal row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.runtime.kernels.row_codes import lexicographic_ids

#: the trailing column of an updating batch
ROW_KIND = "$row_kind"

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
#: Flink's short strings, indexed by kind code
LABELS = ("+I", "-U", "+U", "-D")


def row_kind_field() -> pa.Field:
    return pa.field(ROW_KIND, pa.int8(), nullable=False)


def is_updating(batch: pa.RecordBatch, width: int) -> bool:
    """Whether ``batch`` (of a plan with ``width`` columns) carries row kinds."""
    if batch.num_columns == width:
        return False
    if batch.num_columns == width + 1 and batch.schema.names[-1] == ROW_KIND:
        return True
    raise ExecutionError(f"batch has {batch.num_columns} columns where the plan has {width}")


def with_row_kinds(batch: pa.RecordBatch, kinds: pa.Array | np.ndarray | int
                   ) -> pa.RecordBatch:
    """``batch`` (plan columns only) with ``ROW_KIND`` appended; ``kinds`` is one code for
    every row or one per row."""
    if isinstance(kinds, int):
        column = pa.array(np.full(batch.num_rows, kinds, dtype=np.int8))
    elif isinstance(kinds, pa.Array) and kinds.type == pa.int8():
        column = kinds
    else:
        column = pa.array(np.asarray(kinds, dtype=np.int8))
    return pa.RecordBatch.from_arrays([*batch.columns, column],
                                      schema=batch.schema.append(row_kind_field()))


def row_kinds(batch: pa.RecordBatch, width: int) -> np.ndarray:
    """The row kind codes of ``batch``: all ``INSERT`` for an insert-only batch."""
    if is_updating(batch, width):
        return batch.column(width).to_numpy(zero_copy_only=False).astype(np.int8, copy=False)
    return np.zeros(batch.num_rows, dtype=np.int8)


def data_columns(batch: pa.RecordBatch, width: int) -> pa.RecordBatch:
    """``batch`` without its row kinds (the plan columns only)."""
    return batch.select(range(width)) if batch.num_columns > width else batch


def is_addition(kinds: np.ndarray) -> np.ndarray:
    """Rows that add a value (``+I``, ``+U``) as opposed to retracting one."""
    return (kinds == INSERT) | (kinds == UPDATE_AFTER)


def materialize(batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """The table an ordered changelog ends at: additions minus retractions, as multisets.

    Vectorized over the whole log: every row gets an occurrence number among the equal
    rows of its own kind (additions and retractions counted separately); a retraction
    cancels the addition with the same value and occurrence number. That equals applying
    the changes one by one whenever the log is valid (a retraction never precedes the
    addition it removes), which every operator guarantees. A retraction with nothing to
    cancel means the log is broken and raises.
    """
    width = len(schema)
    parts = [b for b in batches if b.num_rows]
    if not parts:
        return schema.empty_table()
    kinds = np.concatenate([row_kinds(b, width) for b in parts])
    data = pa.Table.from_batches(
        [pa.RecordBatch.from_arrays(data_columns(b, width).columns, schema=schema)
         for b in parts], schema=schema)
    if not (~is_addition(kinds)).any():
        return data
    return _cancel(data, is_addition(kinds))


def _cancel(data: pa.Table, adds: np.ndarray) -> pa.Table:
    n = data.num_rows
    rows = row_ids(data)
    # occurrence number of each row among the equal rows of its own kind, in log order
    kind_rows = rows * 2 + adds
    order = np.lexsort((np.arange(n), kind_rows))
    sorted_ids = kind_rows[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    occurrence = np.empty(n, dtype=np.int64)
    occurrence[order] = np.arange(n) - run_start
    match = rows * n + occurrence
    retracted = match[~adds]
    cancelled = adds & np.isin(match, retracted)
    if int(cancelled.sum()) != len(retracted):
        raise ExecutionError("changelog retracts a row that was never added")
    return data.filter(pa.array(adds & ~cancelled))


def row_ids(data: pa.Table) -> np.ndarray:
    """One int64 per row, equal exactly for equal rows (NULL equals NULL here)."""
    codes = []
    for column in data.combine_chunks().columns:
        array = column.chunk(0) if column.num_chunks else pa.array([], column.type)
        if pa.types.is_string_view(array.type):
            array = array.cast(pa.large_string())
        encoded = pc.dictionary_encode(array, null_encoding="encode")
        codes.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
    if not codes:
        return np.zeros(data.num_rows, dtype=np.int64)
    return lexicographic_ids(codes)


def labels(kinds: Sequence[int] | np.ndarray) -> list[str]:
    """``+I``/``-U``/``+U``/``-D`` per code."""
    return [LABELS[k] for k in np.asarray(kinds).tolist()]
