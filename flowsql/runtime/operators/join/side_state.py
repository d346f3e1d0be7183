"""One join input's stored rows in keyed state, and output rows from index arrays.

A side's state table holds, per stored row, its key columns ``k<i>`` (already in the
common key types, so stored rows join without re-evaluating expressions), its data columns
``c<i>`` (the input's columns by position) and operator-specific bookkeeping columns. The
key group of a row is the hash of its key columns, which is what a rescaled restore
redistributes by.

Output rows are described by two index arrays, one into the left rows and one into the
right rows; an index of ``-1`` stands for a row of NULLs (outer-join padding).

A side created with ``expires`` keeps its rows' write times (``state.ttl``): rows added or
replaced are written now unless the owner passes the times of rows it did not change.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from flowsql.planner.schema import Schema, to_arrow_schema
from flowsql.runtime.kernels.batches import conform, internal_names, make_batch, positional
from flowsql.runtime.operators.join.join_output import paired
from flowsql.runtime.state.keyed_table import KeyedTableState
from flowsql.runtime.state.store import StateStore

_MAX_CHUNKS = 32


class SideState:
    """The stored rows of one join input (see the module docstring)."""

    def __init__(self, store: StateStore, name: str, schema: Schema,
                 key_types: Sequence[pa.DataType], extra: Sequence[pa.Field],
                 expires: bool = False) -> None:
        self.key_names = internal_names(len(key_types), "k")
        self.data_names = internal_names(len(schema), "c")
        arrow = to_arrow_schema(schema)
        fields = ([pa.field(n, t) for n, t in zip(self.key_names, key_types)]
                  + [pa.field(n, f.type) for n, f in zip(self.data_names, arrow)]
                  + list(extra))
        self.table: KeyedTableState = store.keyed_table(name, pa.schema(fields), expires)

    @property
    def rows(self) -> pa.Table:
        return self.table.rows

    def keys(self, rows: pa.Table) -> list[pa.ChunkedArray]:
        return [rows.column(n) for n in self.key_names]

    def data(self, rows: pa.Table) -> pa.Table:
        """The data columns of ``rows``, by position."""
        return positional(rows.select(self.data_names).columns, rows.num_rows)

    def new_rows(self, keys: Sequence[pa.Array], batch: pa.RecordBatch, take: np.ndarray,
                 extra: Sequence[pa.Array]) -> pa.Table:
        """State rows (key group included) for the rows ``take`` of ``batch`` whose key
        columns are ``keys``; ``extra`` gives the bookkeeping columns of those rows."""
        indices = pa.array(take.astype(np.int64, copy=False))
        key_columns = [k.take(indices) for k in keys]
        groups = self.table.key_groups_of(key_columns, len(take))
        schema = self.table.schema
        values = [pa.array(groups, pa.int32()), *key_columns,
                  *(c.take(indices) for c in batch.columns), *extra]
        columns = [conform(v, f.type) for v, f in zip(values, schema)]
        return pa.Table.from_arrays(columns, schema=schema)

    @property
    def updated_at(self) -> np.ndarray:
        """Write time of every stored row (empty unless the side expires)."""
        return self.table.updated_at

    def append(self, rows: pa.Table) -> None:
        if rows.num_rows:
            stamps = (None if self.table.ttl is None else np.concatenate(
                [self.updated_at, self.table.ttl.stamps(rows.num_rows)]))
            self.replace(pa.concat_tables([self.table.rows, rows]), stamps)

    def replace(self, rows: pa.Table, updated_at: np.ndarray | None = None) -> None:
        """Make ``rows`` the whole content (written at ``updated_at``, by default now),
        merging chunks once they pile up (every batch adds a chunk, and per-chunk overhead
        would otherwise grow without bound)."""
        if rows.num_columns and rows.column(0).num_chunks > _MAX_CHUNKS:
            rows = rows.combine_chunks()
        self.table.replace(rows, updated_at)


def both_sides(store: StateStore, left: Schema, right: Schema, key_types: Sequence[pa.DataType],
               bookkeeping: Sequence[pa.Field], expires: bool = False
               ) -> tuple[SideState, SideState]:
    """The ``left`` and ``right`` side states of a two-input join in ``store``."""
    return (SideState(store, "left", left, key_types, bookkeeping, expires),
            SideState(store, "right", right, key_types, bookkeeping, expires))


def nullable_indices(ids: np.ndarray) -> pa.Array:
    """Row numbers where ``-1`` becomes a NULL index (a row of NULLs under ``take``)."""
    ids = ids.astype(np.int64, copy=False)
    negative = ids < 0
    return pa.array(ids, mask=negative) if negative.any() else pa.array(ids)


def assemble(schema: Schema, left: pa.Table, right: pa.Table, lid: np.ndarray,
             rid: np.ndarray) -> pa.RecordBatch:
    """Output rows of ``schema``: left row ``lid[i]`` next to right row ``rid[i]``."""
    columns = paired(left, right, nullable_indices(lid), nullable_indices(rid))
    return make_batch(columns, schema, len(lid))
