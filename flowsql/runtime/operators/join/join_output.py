"""From matching row pairs to join output, shared by the hash and nested-loop joins.

A join algorithm only finds the pairs ``(lid[i], rid[i])`` of left and right row numbers
that satisfy the whole join condition (keys and residual). Every join kind is then a
function of those pairs: inner takes them, outer kinds add the unmatched rows of one or
both sides padded with NULLs (a NULL index in ``take`` yields a NULL row), semi / anti keep
left rows with / without a pair, mark appends whether a pair exists, single is a left join
that rejects a left row with two pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from flowsql.errors import ExecutionError

SCALAR_SUBQUERY_ERROR = "scalar subquery returned more than one row"


def matched(ids: np.ndarray, size: int) -> np.ndarray:
    """Boolean array: which of ``size`` rows occur in ``ids``."""
    mask = np.zeros(size, dtype=bool)
    mask[ids] = True
    return mask


def _indices(values: Sequence[np.ndarray], nulls: int = 0) -> pa.Array:
    """Concatenated row numbers followed by ``nulls`` NULL indices."""
    data = np.concatenate([*values, np.zeros(nulls, dtype=np.int64)]) if values or nulls \
        else np.zeros(0, dtype=np.int64)
    if not nulls:
        return pa.array(data.astype(np.int64, copy=False))
    mask = np.zeros(len(data), dtype=bool)
    mask[len(data) - nulls:] = True
    return pa.array(data.astype(np.int64, copy=False), mask=mask)


def paired(left: pa.Table, right: pa.Table, lid: pa.Array | np.ndarray,
           rid: pa.Array | np.ndarray) -> list[pa.ChunkedArray | pa.Array]:
    """Left columns taken at ``lid`` followed by right columns taken at ``rid``."""
    return [*left.take(lid).columns, *right.take(rid).columns]


def _nulls_before(n: int, ids: np.ndarray) -> pa.Array:
    """``n`` NULL indices followed by ``ids``."""
    data = np.concatenate([np.zeros(n, dtype=np.int64), ids.astype(np.int64, copy=False)])
    mask = np.zeros(len(data), dtype=bool)
    mask[:n] = True
    return pa.array(data, mask=mask)


def join_result(kind: str, left: pa.Table, right: pa.Table, lid: np.ndarray,
                rid: np.ndarray, unmatched_right: bool = True
                ) -> tuple[list[pa.ChunkedArray | pa.Array], int]:
    """Output columns (by position) and row count for the row-producing kinds: inner,
    left, right, full, single. ``unmatched_right`` False leaves out the right rows
    without a pair (a caller that sees the left side in pieces adds them at the end)."""
    if kind == "single" and len(lid) and np.bincount(lid).max() > 1:
        raise ExecutionError(SCALAR_SUBQUERY_ERROR)
    li: list[np.ndarray] = [lid]
    ri: list[np.ndarray] = [rid]
    pad_right = 0
    if kind in ("left", "full", "single"):
        lonely = np.flatnonzero(~matched(lid, left.num_rows))
        li.append(lonely)
        pad_right = len(lonely)
    lids = _indices(li)
    rids = _indices(ri, pad_right)
    if kind in ("right", "full") and unmatched_right:
        lonely = np.flatnonzero(~matched(rid, right.num_rows))
        lids = pa.concat_arrays([lids, _nulls_before(len(lonely), np.zeros(0))])
        rids = pa.concat_arrays([rids, pa.array(lonely.astype(np.int64))])
    return paired(left, right, lids, rids), len(lids)


def unmatched_right_rows(left: pa.Table, right: pa.Table, right_matched: np.ndarray
                         ) -> tuple[list[pa.ChunkedArray | pa.Array], int]:
    """Right rows never paired, with NULL left columns (right / full joins)."""
    lonely = np.flatnonzero(~right_matched)
    lids = _nulls_before(len(lonely), np.zeros(0, dtype=np.int64))
    return paired(left, right, lids, pa.array(lonely.astype(np.int64))), len(lonely)
