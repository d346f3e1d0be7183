"""The join condition of a two-input streaming join, compiled once per operator.

A streaming join meets the same condition as the batch hash join -- equi keys plus an
optional residual over the concatenated left + right schema -- but between one arriving
batch and the other side's stored rows. Key pairs come from one Acero hash join of the key
columns (cast pairwise to a common type, as the batch join does), so a NULL key never
matches (SQL equality); without keys every pair is a candidate. The residual then filters
the pairs, evaluated on the paired rows exactly like the batch join's residual.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.expressions import Expr
from flowsql.planner.schema import Schema
from flowsql.runtime.expressions import compile_expr, compile_predicate
from flowsql.runtime.kernels.batches import make_batch
from flowsql.runtime.operators.join.hash_join import _key_type, _keyed
from flowsql.runtime.operators.join.join_output import paired

# Pairs checked against the residual at a time (bounds the rows materialized at once).
_RESIDUAL_CHUNK = 1 << 20

_NO_PAIRS = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))


class JoinCondition:
    """Equi keys and residual of a join between ``left`` and ``right`` rows."""

    def __init__(self, left: Schema, right: Schema, left_keys: Sequence[Expr],
                 right_keys: Sequence[Expr], residual: Expr | None) -> None:
        self.key_types = [_key_type(lk.dtype, rk.dtype) for lk, rk in zip(left_keys, right_keys)]
        self._key_fns = ([compile_expr(k, left) for k in left_keys],
                         [compile_expr(k, right) for k in right_keys])
        self._schema = (*left, *right)
        self._residual = (compile_predicate(residual, self._schema)
                          if residual is not None else None)

    def keys(self, side: int, batch: pa.RecordBatch) -> list[pa.Array]:
        """The key columns of ``batch`` (of input ``side``), in the common key types."""
        return [pc.cast(fn(batch), dtype)
                for fn, dtype in zip(self._key_fns[side], self.key_types)]

    @staticmethod
    def null_keys(keys: Sequence[pa.Array | pa.ChunkedArray], num_rows: int) -> np.ndarray:
        """Rows with a NULL in some key column: they can never match."""
        mask = np.zeros(num_rows, dtype=bool)
        for key in keys:
            if key.null_count:
                mask |= key.is_null().to_numpy(zero_copy_only=False)
        return mask

    def key_pairs(self, left_keys: Sequence[pa.Array | pa.ChunkedArray], num_left: int,
                  right_keys: Sequence[pa.Array | pa.ChunkedArray], num_right: int
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Pairs ``(lid, rid)`` of left and right row numbers with equal keys (in no
        particular order)."""
        if not num_left or not num_right:
            return _NO_PAIRS
        if not self.key_types:
            return (np.repeat(np.arange(num_left, dtype=np.int64), num_right),
                    np.tile(np.arange(num_right, dtype=np.int64), num_left))
        if any(pa.types.is_null(t) for t in self.key_types):
            return _NO_PAIRS
        ltab = _keyed(list(left_keys), np.arange(num_left), "l")
        rtab = _keyed(list(right_keys), np.arange(num_right), "r")
        lnames = [f"l{i}" for i in range(len(self.key_types))]
        rnames = [f"r{i}" for i in range(len(self.key_types))]
        # Acero builds its hash table on the right table: build on the smaller one (the
        # arriving batch, not the stored rows)
        if num_left <= num_right:
            joined = rtab.join(ltab, keys=rnames, right_keys=lnames, join_type="inner")
        else:
            joined = ltab.join(rtab, keys=lnames, right_keys=rnames, join_type="inner")
        return (joined.column("lid").to_numpy().astype(np.int64, copy=False),
                joined.column("rid").to_numpy().astype(np.int64, copy=False))

    def residual(self, left: pa.Table, right: pa.Table, lid: np.ndarray,
                 rid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The pairs among ``(lid, rid)`` whose rows satisfy the residual; ``left`` and
        ``right`` hold the rows' columns by position."""
        if self._residual is None or not len(lid):
            return lid, rid
        keep = []
        for start in range(0, len(lid), _RESIDUAL_CHUNK):
            li, ri = lid[start:start + _RESIDUAL_CHUNK], rid[start:start + _RESIDUAL_CHUNK]
            batch = make_batch(paired(left, right, li, ri), self._schema, len(li))
            mask = self._residual(batch).to_numpy(zero_copy_only=False)
            keep.append(np.flatnonzero(mask) + start)
        survivors = np.concatenate(keep)
        return lid[survivors], rid[survivors]
