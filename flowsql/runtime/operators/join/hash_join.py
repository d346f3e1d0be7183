"""Hash join (equi keys plus optional residual) for every join kind, on Acero.

Both inputs are collected (the build side first, as ``input_order`` says), then the equi
keys are joined once by Acero over small tables of key columns and row numbers, which
yields the matching pairs ``(lid, rid)``. The residual, if any, filters those pairs. Every
join kind is then derived from the surviving pairs (:mod:`join_output`), which is what
keeps outer, semi, anti, mark and single joins correct in the presence of a residual.
Semi and anti joins without residual ask Acero for the left row numbers directly.

Null-aware joins (``x IN (subquery)`` as mark, ``x NOT IN (subquery)`` as anti): the first
key pair is the IN comparison; further key pairs and the residual are correlation
conditions that select the candidate right rows of a left row. The mark is TRUE when a
candidate matches; otherwise NULL when there are candidates and either the left key is
NULL or some candidate has a NULL key; otherwise FALSE. A null-aware anti join keeps
exactly the left rows whose mark is FALSE.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner import types as T
from flowsql.planner.physical import HashJoinExec
from flowsql.planner.schema import Schema
from flowsql.runtime.expressions import compile_expr, compile_predicate
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    empty_batch,
    make_batch,
    positional,
    table_to_batches,
    to_table,
)
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.join.join_output import join_result, matched, paired

# Pairs checked against the residual at a time (bounds the rows materialized at once).
_RESIDUAL_CHUNK = 1 << 20


def _key_type(left: pa.DataType, right: pa.DataType) -> pa.DataType:
    """The type both sides of a key are compared in (Acero needs identical types)."""
    common = T.common_type(left, right) or left
    common = T.normalize_storage_type(common)
    return pa.int8() if pa.types.is_boolean(common) else common


class _Side:
    """One input as it arrives: data batches and the evaluated key columns."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.batches: list[pa.RecordBatch] = []
        self.keys: list[list[pa.Array]] = []

    def table(self) -> pa.Table:
        return to_table(self.batches or [empty_batch(self.schema)], len(self.schema))


class HashJoinOperator(Operator):
    """See the module docstring. Holds both inputs (accounted against the memory budget)
    and emits the whole result at the end of the second input."""

    def __init__(self, node: HashJoinExec) -> None:
        self.node = node
        self.input_order = (1, 0) if node.build_side == "right" else (0, 1)

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        node = self.node
        self._key_fns = ([compile_expr(k, node.left.schema) for k in node.left_keys],
                         [compile_expr(k, node.right.schema) for k in node.right_keys])
        self._residual = (compile_predicate(node.residual, (*node.left.schema,
                                                            *node.right.schema))
                          if node.residual is not None else None)
        self._sides = (_Side(node.left.schema), _Side(node.right.schema))
        self._ended: set[int] = set()
        self._memory = HeldMemory(context)

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        side = self._sides[input]
        keys = [fn(batch) for fn in self._key_fns[input]]
        side.batches.append(batch)
        side.keys.append(keys)
        self._memory.hold(batch_nbytes(batch) + sum(k.nbytes for k in keys))
        return ()

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        self._ended.add(input)
        if len(self._ended) < 2:
            return ()
        table = self._join()
        self._sides = (_Side(()), _Side(()))
        self._memory.release_all()
        return table_to_batches(table, self.node.schema, batch_size(self.context.settings))

    def close(self) -> None:
        self._memory.release_all()

    # -- the join proper ------------------------------------------------------------------

    def _key_columns(self) -> tuple[list[pa.ChunkedArray], list[pa.ChunkedArray]]:
        """Key columns of both sides, cast pairwise to a common type."""
        left, right = [], []
        node = self.node
        for i, (lk, rk) in enumerate(zip(node.left_keys, node.right_keys)):
            ltype, rtype = lk.dtype, rk.dtype
            target = _key_type(ltype, rtype)
            left.append(_column([k[i] for k in self._sides[0].keys], ltype).cast(target))
            right.append(_column([k[i] for k in self._sides[1].keys], rtype).cast(target))
        return left, right

    def _join(self) -> pa.Table:
        node = self.node
        left, right = self._sides[0].table(), self._sides[1].table()
        lkeys, rkeys = self._key_columns()
        self._left, self._right, self._lkeys, self._rkeys = left, right, lkeys, rkeys
        kind = node.kind
        if kind in ("semi", "anti") and self._residual is None and not node.null_aware:
            keep = self._semi_rows(kind)
            return positional(left.take(pa.array(keep)).columns, len(keep))
        everything = np.arange(left.num_rows), np.arange(right.num_rows)
        lid, rid = self._pairs(*everything, list(range(len(lkeys))))
        if kind in ("inner", "left", "right", "full", "single"):
            columns, rows = join_result(kind, left, right, lid, rid)
            return positional(columns, rows)
        mark = self._mark(lid)
        if kind == "mark":
            return positional([*left.columns, mark], left.num_rows)
        if kind == "semi":
            keep_mask = mark.to_numpy(zero_copy_only=False)
        else:  # anti: left rows whose mark is FALSE (not TRUE, and for NOT IN not NULL)
            keep_mask = pc.fill_null(pc.invert(mark), False).to_numpy(zero_copy_only=False)
        keep = np.flatnonzero(keep_mask)
        return positional(left.take(pa.array(keep)).columns, len(keep))

    def _semi_rows(self, kind: str) -> np.ndarray:
        """Left row numbers with (semi) / without (anti) an equal key, via Acero."""
        ltab = _keyed(self._lkeys, np.arange(self._left.num_rows), "l")
        rtab = _keyed(self._rkeys, np.arange(self._right.num_rows), "r").drop_columns(["rid"])
        names = [f"l{i}" for i in range(len(self._lkeys))]
        joined = ltab.join(rtab, keys=names, right_keys=[f"r{i}" for i in range(len(names))],
                           join_type=f"left {kind}")
        return np.sort(joined.column("lid").to_numpy())

    def _pairs(self, lrows: np.ndarray, rrows: np.ndarray,
               keys: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Pairs among the given left and right rows equal on ``keys`` (all of them if
        there are none) that satisfy the residual."""
        if keys:
            ltab = _keyed([self._lkeys[k].take(lrows) for k in keys], lrows, "l")
            rtab = _keyed([self._rkeys[k].take(rrows) for k in keys], rrows, "r")
            if any(pa.types.is_null(c.type) for c in ltab.columns[:-1]):
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
            joined = ltab.join(rtab, keys=[f"l{i}" for i in range(len(keys))],
                               right_keys=[f"r{i}" for i in range(len(keys))],
                               join_type="inner")
            lid = joined.column("lid").to_numpy()
            rid = joined.column("rid").to_numpy()
        else:
            lid = np.repeat(lrows, len(rrows))
            rid = np.tile(rrows, len(lrows))
        if self._residual is None or not len(lid):
            return lid, rid
        return self._filter_residual(lid, rid)

    def _filter_residual(self, lid: np.ndarray, rid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        schema = (*self.node.left.schema, *self.node.right.schema)
        keep = []
        for start in range(0, len(lid), _RESIDUAL_CHUNK):
            li, ri = lid[start:start + _RESIDUAL_CHUNK], rid[start:start + _RESIDUAL_CHUNK]
            batch = make_batch(paired(self._left, self._right, li, ri), schema, len(li))
            assert self._residual is not None
            mask = self._residual(batch).to_numpy(zero_copy_only=False)
            keep.append(np.flatnonzero(mask) + start)
        survivors = np.concatenate(keep)
        return lid[survivors], rid[survivors]

    def _mark(self, lid: np.ndarray) -> pa.Array:
        """The mark of every left row given the matching pairs (see module docstring)."""
        found = matched(lid, self._left.num_rows)
        if not self.node.null_aware:
            return pa.array(found)
        lnull = self._lkeys[0].is_null().to_numpy(zero_copy_only=False)
        rnull = self._rkeys[0].is_null().to_numpy(zero_copy_only=False)
        open_rows = ~found
        others = list(range(1, len(self._lkeys)))
        unknown = np.zeros(self._left.num_rows, dtype=bool)
        nright = self._right.num_rows
        # A NULL left key is unknown against any candidate.
        nulls_left = np.flatnonzero(open_rows & lnull)
        if len(nulls_left) and nright:
            if others or self._residual is not None:
                hit, _ = self._pairs(nulls_left, np.arange(nright), others)
                unknown[hit] = True
            else:
                unknown[nulls_left] = True
        # A non-NULL left key is unknown against a candidate with a NULL key.
        rows = np.flatnonzero(open_rows & ~lnull)
        null_right = np.flatnonzero(rnull)
        if len(rows) and len(null_right):
            if others or self._residual is not None:
                hit, _ = self._pairs(rows, null_right, others)
                unknown[hit] = True
            else:
                unknown[rows] = True
        return pa.array(found, mask=unknown)


def _column(chunks: list[pa.Array], dtype: pa.DataType) -> pa.ChunkedArray:
    return pa.chunked_array(chunks, type=chunks[0].type if chunks else dtype)


def _keyed(keys: list[pa.ChunkedArray | pa.Array], rows: np.ndarray, prefix: str) -> pa.Table:
    """Key columns named ``<prefix><i>`` plus the row numbers as ``<prefix>id``."""
    names = [f"{prefix}{i}" for i in range(len(keys))]
    return pa.table([*keys, pa.array(rows.astype(np.int64, copy=False))],
                    names=[*names, f"{prefix}id"])
