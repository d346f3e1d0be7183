"""Sort order over computed key arrays with per-key direction and NULL placement.

pyarrow places NULLs globally (all first or all last); SQL decides per key. A key with
NULLs therefore gets an extra boolean "is null" key right before it, sorted so NULLs land
where that key wants them; the value key then only orders the non-NULL rows. Decimal keys
that fit 64 bits are compared as their unscaled integers: same order, many times faster
than Arrow's decimal comparisons.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.expressions import SortKey
from flowsql.runtime.kernels.decimals import INT64_DIGITS, unscaled


def _comparable(key: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    if not (pa.types.is_decimal128(key.type) and key.type.precision <= INT64_DIGITS):
        return key
    array = key.combine_chunks() if isinstance(key, pa.ChunkedArray) else key
    units, _ = unscaled(array)
    return pa.array(units, mask=array.is_null().to_numpy(zero_copy_only=False))


def _key_table(keys: Sequence[pa.Array | pa.ChunkedArray], specs: Sequence[SortKey]
               ) -> tuple[pa.Table | None, list[tuple[str, str]]]:
    columns: list[pa.Array | pa.ChunkedArray] = []
    sort_keys: list[tuple[str, str]] = []
    for key, spec in zip(keys, specs):
        if pa.types.is_null(key.type):
            continue  # a constant NULL key orders nothing
        if key.null_count:
            columns.append(pc.is_null(key))
            sort_keys.append((f"k{len(columns) - 1}",
                              "descending" if spec.nulls_first else "ascending"))
        columns.append(_comparable(key))
        sort_keys.append((f"k{len(columns) - 1}", "ascending" if spec.ascending else "descending"))
    if not columns:
        return None, sort_keys
    return pa.table(columns, names=[f"k{i}" for i in range(len(columns))]), sort_keys


def sort_indices(keys: Sequence[pa.Array | pa.ChunkedArray], specs: Sequence[SortKey],
                 num_rows: int) -> pa.Array:
    """Stable permutation that orders rows by ``keys`` as ``specs`` say."""
    table, sort_keys = _key_table(keys, specs)
    if table is None:
        return pa.array(np.arange(num_rows, dtype=np.int64))
    return pc.sort_indices(table, sort_keys=sort_keys)


def top_indices(keys: Sequence[pa.Array | pa.ChunkedArray], specs: Sequence[SortKey],
                num_rows: int, k: int) -> pa.Array:
    """Indices of the first ``k`` rows in that order, in order (ties broken arbitrarily)."""
    table, sort_keys = _key_table(keys, specs)
    if table is None:
        return pa.array(np.arange(min(k, num_rows), dtype=np.int64))
    return pc.select_k_unstable(table, k=min(k, num_rows), sort_keys=sort_keys)
