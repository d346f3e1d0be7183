"""Split rows into partitions by a salted hash of their keys (grace hash join, partitioned
aggregation)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from flowsql.runtime.partitioning import fmix64, hash_columns

_U64 = np.uint64


def partition_indices(keys: Sequence[pa.Array | pa.ChunkedArray], partitions: int,
                      level: int = 0) -> np.ndarray:
    """Partition number in ``[0, partitions)`` of every row (int64).

    ``level`` salts the hash: rows that shared a partition at level ``n`` spread over the
    partitions at level ``n + 1``, so a grace join can recurse into a partition that is
    still too large. Rows with equal keys land in the same partition at every level; NULL
    keys hash like any other value. The salt also keeps spill partitions independent of
    the exchange's key groups (which use the unsalted hash), so the rows one subtask
    receives still spread over all its spill partitions.
    """
    hashes = hash_columns(keys)
    salted = fmix64(hashes ^ _U64((0x9E3779B97F4A7C15 * (level + 1)) & 0xFFFFFFFFFFFFFFFF))
    return (salted % _U64(partitions)).astype(np.int64)


def partition_by_hash(batch: pa.RecordBatch, keys: Sequence[pa.Array], partitions: int,
                      level: int = 0) -> list[pa.RecordBatch | None]:
    """``batch`` split by :func:`partition_indices`: one batch per partition (None where a
    partition got no rows), rows in input order within each partition."""
    if batch.num_rows == 0:
        return [None] * partitions
    parts = partition_indices(keys, partitions, level)
    order = np.argsort(parts, kind="stable")
    counts = np.bincount(parts, minlength=partitions)
    result: list[pa.RecordBatch | None] = []
    start = 0
    for count in counts:
        if count == 0:
            result.append(None)
        else:
            result.append(batch.take(pa.array(order[start:start + count])))
        start += int(count)
    return result
