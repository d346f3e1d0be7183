"""Hash join (equi keys plus optional residual) for every join kind: build once, stream the
probe side.

The build side comes first (``input_order``): its batches and their key columns (cast to
one common type per key pair) are held against ``execution.memory-budget``. At its end the
keys are indexed once (:class:`KeyIndex`), and every probe batch is then joined as it
arrives and its output emitted at once (:class:`BuildProbeJoin`, which also states how each
join kind and the null-aware IN / NOT IN marks are derived); what only the end of the probe
side decides (unmatched build rows of outer joins, semi / anti / mark answers for a left
build side) comes at its end. Only the build side is ever held.

When the build side does not fit the budget (``HeldMemory.try_hold`` refuses), what was
held is split into hash partitions and the join continues as a hybrid grace hash join
(:class:`GraceHashJoin`): the rest of the build side and the whole probe side are
partitioned the same way; partitions that fit stay in memory and are joined as the probe
side streams, the others are spilled and their pairs joined one at a time at the end of
the probe side.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.expressions import ColumnRef, Expr, walk
from flowsql.planner.physical import HashJoinExec
from flowsql.planner.schema import Schema
from flowsql.runtime.expressions import compile_expr, compile_predicate
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    conform,
    empty_batch,
    positional,
    table_to_batches,
)
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.join.build_probe import BuildProbeJoin, JoinSpec
from flowsql.runtime.operators.join.grace_hash_join import INDEX_BYTES_PER_ROW, GraceHashJoin

#: at most this much memory (if the budget has it) for a key index's direct lookup table
#: beyond its usual size: integer keys of a wide range then still probe by one lookup
_DIRECT_TABLE_BYTES = 16 << 20


def _key_type(left: pa.DataType, right: pa.DataType) -> pa.DataType:
    """The type both sides of a key are compared in (one type for hashing and equality)."""
    common = T.common_type(left, right) or left
    common = T.normalize_storage_type(common)
    return pa.int8() if pa.types.is_boolean(common) else common


def _spill_schema(schema: Schema, key_types: list[pa.DataType]) -> pa.Schema:
    """A side's spilled batches: its columns, then its cast key columns."""
    return pa.schema([pa.field(f"c{i}", f.dtype) for i, f in enumerate(schema)]
                     + [pa.field(f"k{i}", t) for i, t in enumerate(key_types)])


def residual_inputs(residual: Expr, pair: Schema) -> tuple[int, ...] | None:
    """Positions in ``pair`` (left then right schema) of the columns ``residual`` reads,
    in order, each column resolved as the compiler resolves it (the last field of its id);
    None when it reads none (a constant is evaluated over the whole pair schema)."""
    positions = {f.cid: i for i, f in enumerate(pair)}
    used = {positions[e.cid] for e in walk(residual)
            if isinstance(e, ColumnRef) and e.cid in positions}
    return tuple(sorted(used)) if used else None


class HashJoinOperator(Operator):
    """See the module docstring."""

    def __init__(self, node: HashJoinExec) -> None:
        self.node = node
        self._build_input = 1 if node.build_side == "right" else 0
        self.input_order = (self._build_input, 1 - self._build_input)

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        node = self.node
        self._key_fns = ([compile_expr(k, node.left.schema) for k in node.left_keys],
                         [compile_expr(k, node.right.schema) for k in node.right_keys])
        self._key_types = [_key_type(lk.dtype, rk.dtype)
                           for lk, rk in zip(node.left_keys, node.right_keys)]
        pair = (*node.left.schema, *node.right.schema)
        residual_columns = (residual_inputs(node.residual, pair)
                            if node.residual is not None else None)
        residual = (compile_predicate(node.residual, pair if residual_columns is None
                                      else tuple(pair[i] for i in residual_columns))
                    if node.residual is not None else None)
        self._spec = JoinSpec(node.kind, node.build_side, node.left.schema, node.right.schema,
                              residual, node.null_aware, len(node.left_keys), residual_columns)
        self._schemas = (node.left.schema, node.right.schema)
        self._held: list[tuple[pa.RecordBatch, list[pa.Array]]] = []
        self._joined: BuildProbeJoin | None = None
        self._grace: GraceHashJoin | None = None
        self._memory = HeldMemory(context)
        self._batch_size = batch_size(context.settings)

    def _keys(self, input: int, batch: pa.RecordBatch) -> list[pa.Array]:
        return [conform(fn(batch), t) for fn, t in zip(self._key_fns[input], self._key_types)]

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        keys = self._keys(input, batch)
        if input == self._build_input:
            self._add_build(batch, keys)
            return ()
        if self._grace is not None:
            return self._emit_all(iter(self._grace.add_probe(self._with_keys(input, batch,
                                                                              keys))))
        assert self._joined is not None, "the build side ends before the probe side starts"
        return self._emit(self._joined.probe(_data(batch), keys))

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        if input == self._build_input:
            self._end_build()
            return ()
        if self._grace is not None:
            grace, self._grace = self._grace, None
            return self._emit_all(grace.results())
        assert self._joined is not None
        out = self._joined.finish()
        self._joined = None
        self._memory.release_all()
        return self._emit(out)

    def close(self) -> None:
        self._held = []
        self._joined = None
        self._grace = None
        self._memory.release_all()

    # -- build side -----------------------------------------------------------------------

    def _add_build(self, batch: pa.RecordBatch, keys: list[pa.Array]) -> None:
        if self._grace is not None:
            self._grace.add_build(self._with_keys(self._build_input, batch, keys))
            return
        if self._memory.try_hold(batch_nbytes(batch) + sum(k.nbytes for k in keys)):
            self._held.append((batch, keys))
            return
        self._start_grace()
        assert self._grace is not None
        self._grace.add_build(self._with_keys(self._build_input, batch, keys))

    def _end_build(self) -> None:
        if self._grace is not None:
            self._grace.end_build()
            return
        rows = sum(b.num_rows for b, _ in self._held)
        if not self._memory.try_hold(INDEX_BYTES_PER_ROW * rows):
            self._start_grace()
            assert self._grace is not None
            self._grace.end_build()
            return
        side = self._build_input
        held, self._held = self._held, []
        data, keys = _combined(held or [(empty_batch(self._schemas[side]), [
            pa.array([], t) for t in self._key_types])], len(self._schemas[side]))
        del held
        available = self.context.memory.available
        spare = _DIRECT_TABLE_BYTES if available is None else min(available,
                                                                    _DIRECT_TABLE_BYTES)
        self._joined = BuildProbeJoin(self._spec, data, keys, spare_bytes=spare)
        self._memory.hold(self._joined.index.extra_bytes)  # within ``available``

    def _start_grace(self) -> None:
        """Switch to the grace join: what is held goes to disk and is released."""
        build, probe = self._build_input, 1 - self._build_input
        self._grace = GraceHashJoin(
            self._spec, self.context, self._memory,
            _spill_schema(self._schemas[build], self._key_types),
            _spill_schema(self._schemas[probe], self._key_types), self.context.name)
        held, self._held = self._held, []
        self._memory.release_all()  # the grace join holds what stays resident again
        while held:
            batch, keys = held.pop(0)
            self._grace.add_build(self._with_keys(build, batch, keys))
            del batch, keys

    def _with_keys(self, input: int, batch: pa.RecordBatch,
                   keys: list[pa.Array]) -> pa.RecordBatch:
        schema = self._schemas[input]
        columns = [conform(c, f.dtype) for c, f in zip(batch.columns, schema)]
        return pa.RecordBatch.from_arrays(
            [*columns, *keys], names=[*(f"c{i}" for i in range(len(columns))),
                                      *(f"k{i}" for i in range(len(keys)))])

    # -- output ---------------------------------------------------------------------------

    def _emit(self, table: pa.Table | None) -> list[pa.RecordBatch]:
        if table is None:
            return []
        return table_to_batches(table, self.node.schema, self._batch_size)

    def _emit_all(self, tables: Iterator[pa.Table]) -> Iterator[pa.RecordBatch]:
        for table in tables:
            yield from self._emit(table)


def _combined(held: list[tuple[pa.RecordBatch, list[pa.Array]]], width: int
              ) -> tuple[pa.Table, list[pa.Array]]:
    """The held build batches as one table of contiguous columns, and their keys.

    Column by column, dropping each column's pieces once it is combined: combining the
    whole table at once would hold every byte of the build side twice for a moment, more
    than the build side's accounted share. The caller must hold no other reference to the
    batches."""
    rows = sum(batch.num_rows for batch, _ in held)
    pieces: list[list[pa.Array] | None] = [
        [batch.column(i) for batch, _ in held] for i in range(width)]
    key_pieces: list[list[pa.Array] | None] = [
        [keys[i] for _, keys in held] for i in range(len(held[0][1]))]
    held.clear()
    columns = []
    for i, chunks in enumerate(pieces):
        assert chunks is not None
        pieces[i] = None
        columns.append(pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0])
        del chunks
    keys = []
    for i, chunks in enumerate(key_pieces):
        assert chunks is not None
        key_pieces[i] = None
        keys.append(pa.concat_arrays(chunks) if len(chunks) > 1 else chunks[0])
        del chunks
    return positional(columns, rows), keys


def _data(batch: pa.RecordBatch) -> pa.Table:
    """A batch as a table with positional names (a zero-column batch keeps its rows)."""
    return positional(batch.columns, batch.num_rows)


def _keyed(keys: list[pa.ChunkedArray | pa.Array], rows: np.ndarray, prefix: str) -> pa.Table:
    """Key columns named ``<prefix><i>`` plus the row numbers as ``<prefix>id`` (the
    sort-merge join's pair finder joins such tables with Acero)."""
    names = [f"{prefix}{i}" for i in range(len(keys))]
    return pa.table([*keys, pa.array(rows.astype(np.int64, copy=False))],
                    names=[*names, f"{prefix}id"])
