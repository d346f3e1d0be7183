"""Merging accumulator rows per key with numpy: one stable sort, then segment reductions.

A fast path for the common shape of a window aggregate: one group key of an integer type
and integer accumulators (counts, sums and min / max of integers). It computes the same
rows as the Acero group-by of :meth:`Accumulators.merge` followed by a sort on the key:
sums wrap on overflow like Arrow's, a NULL accumulator (a sum or min / max that saw no
value) is skipped, and a result is NULL only when all its inputs are. It is faster
because the inputs are few tables that are each sorted by key already (compacted slices):
numpy's stable sort (timsort) merges such runs in close to linear time, and the output
comes out sorted, which the window operator's output order needs anyway.

Anything else (several keys, other key types, NULL keys, floating or decimal
accumulators, whose summation order or NaN handling could differ) is left to Acero:
:func:`merge_sorted` returns None for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_REDUCERS: dict[str, np.ufunc] = {"sum": np.add, "min": np.minimum, "max": np.maximum}


def numpy_mergeable(key_types: Sequence[pa.DataType],
                    parts: Sequence[tuple[str, str, pa.DataType]]) -> bool:
    """Whether :func:`merge_sorted` handles keys of ``key_types`` and accumulator ``parts``
    given as (column, merge function, type)."""
    return (len(key_types) == 1 and pa.types.is_integer(key_types[0])
            and all(function in _REDUCERS and pa.types.is_integer(dtype)
                    for _, function, dtype in parts))


def merge_sorted(rows: pa.Table, key: str, parts: Sequence[tuple[str, str, pa.DataType]],
                 carry: Sequence[str] = ()) -> pa.Table | None:
    """One row per distinct ``key`` of ``rows``, ascending by key: the key, the ``carry``
    columns (taken from the group's first row; they must be functions of the key), then each
    part merged. None when the key column holds NULLs (or there are no rows)."""
    column = rows.column(key)
    if column.null_count or not rows.num_rows:
        return None
    keys = column.to_numpy()
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    heads = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
    firsts = pa.array(order[heads])
    columns: list[pa.Array | pa.ChunkedArray] = [pa.array(ordered[heads], column.type)]
    columns.extend(rows.column(name).take(firsts) for name in carry)
    for name, function, dtype in parts:
        columns.append(_reduce(rows.column(name), function, dtype, order, heads))
    return pa.Table.from_arrays(columns, names=[key, *carry, *(p[0] for p in parts)])


def _reduce(column: pa.ChunkedArray, function: str, dtype: pa.DataType,
            order: np.ndarray, heads: np.ndarray) -> pa.Array:
    """``function`` over the runs of ``column[order]`` that start at ``heads``; NULLs are
    replaced by the function's identity and the result is NULL where a run has no value."""
    reducer = _REDUCERS[function]
    numpy_type = dtype.to_pandas_dtype()
    if not column.null_count:
        values = np.asarray(column.to_numpy(), numpy_type)[order]
        return pa.array(reducer.reduceat(values, heads), dtype)
    valid = column.is_valid().to_numpy(zero_copy_only=False)[order]
    info = np.iinfo(numpy_type)
    identity = {"sum": 0, "min": info.max, "max": info.min}[function]
    values = np.asarray(column.fill_null(identity).to_numpy(), numpy_type)[order]
    seen = np.logical_or.reduceat(valid, heads)
    return pa.array(reducer.reduceat(values, heads), dtype, mask=~seen)
