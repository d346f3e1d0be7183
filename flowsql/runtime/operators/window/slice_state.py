"""Keyed slice state of the fixed-window aggregate: accumulators per (key, slice).

Records are pre-aggregated into the slice that holds them (one Acero group-by per batch
over group keys and slice end, see :mod:`slicing`), and those partial tables are kept
*unmerged*, one list of tables per slice end: adding a batch never touches what is
stored, so its cost does not grow with the state. A window is computed when it fires, by
one merge of the tables of its slices (:mod:`sorted_merge` where it applies, else an
Acero group-by and a sort), ascending by key; a slice that several windows share (HOP,
CUMULATE) is compacted to one table the first time it is read, so the later windows read
it compact (and, on the numpy path, sorted, which makes their merge sort cheap).

Every stored table has the columns ``KEY_GROUP``, the group keys ``k<i>`` and the
accumulator columns (:class:`Accumulators`), exactly ``schema``, and at most one row per
key (a batch's partial aggregate, or a merge); a slice may hold several such tables. ``to_table`` /
``load`` convert from and to one table with a ``slice_end`` column after the keys: the
form the operator's keyed table state snapshots (and restores by key group).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.operators.window.accumulators import Accumulators
from flowsql.runtime.operators.window.sorted_merge import merge_sorted, numpy_mergeable
from flowsql.runtime.state.keyed_table import KEY_GROUP

SLICE_END = "slice_end"


class SliceState:
    """Partial accumulators per slice end; see the module docstring."""

    def __init__(self, keys: list[str], key_fields: list[pa.Field],
                 accumulators: Accumulators) -> None:
        self._keys = keys
        self._accumulators = accumulators
        self.schema = pa.schema([pa.field(KEY_GROUP, pa.int32()), *key_fields,
                                 *accumulators.fields])
        self.table_schema = pa.schema([pa.field(KEY_GROUP, pa.int32()), *key_fields,
                                       pa.field(SLICE_END, pa.int64()), *accumulators.fields])
        self._slices: dict[int, list[pa.Table]] = {}
        self._compacted: set[int] = set()  # slice ends holding one table, one row per key
        self._numpy_merge = numpy_mergeable([f.type for f in key_fields],
                                            accumulators.merge_parts)

    def __len__(self) -> int:
        return len(self._slices)

    def num_rows(self) -> int:
        """Stored partial rows over all slices (the operator's state size). Read as a
        gauge from another thread while the operator adds and drops slices, so it iterates
        a copy of the slices taken in one step."""
        return sum(t.num_rows for chunks in tuple(self._slices.values()) for t in chunks)

    def nbytes(self) -> int:
        """Bytes of the stored partial rows; a gauge, like :meth:`num_rows`."""
        return sum(int(t.nbytes) for chunks in tuple(self._slices.values()) for t in chunks)

    def ends(self) -> np.ndarray:
        """The ends of the stored slices, ascending."""
        return np.array(sorted(self._slices), np.int64)

    def add(self, partial: pa.Table, slice_ends: np.ndarray) -> None:
        """Store ``partial`` (rows of ``schema``) whose row ``i`` belongs to the slice ending
        at ``slice_ends[i]``. The rows of one slice are cut out of one stable sort."""
        if not partial.num_rows:
            return
        partial = partial.select(self.schema.names).cast(self.schema)
        first, last = int(slice_ends.min()), int(slice_ends.max())
        if first == last:
            self._slices.setdefault(first, []).append(partial)
            self._compacted.discard(first)
            return
        order = np.argsort(slice_ends, kind="stable")
        ordered = partial.take(pa.array(order))
        ends = slice_ends[order]
        cuts = np.flatnonzero(ends[1:] != ends[:-1]) + 1
        bounds = np.concatenate(([0], cuts, [len(ends)]))
        for start, stop in zip(bounds[:-1], bounds[1:]):
            self._slices.setdefault(int(ends[start]), []).append(
                ordered.slice(int(start), int(stop - start)))
            self._compacted.discard(int(ends[start]))

    def window(self, start: int, end: int, shared: set[int]) -> pa.Table | None:
        """The merged accumulators per key of the window ``[start, end)``, ascending by the
        group keys (columns ``k<i>`` then the accumulators), or None when no slice of it
        holds rows. ``shared``: ends of the slices that later windows read too; those are
        compacted in place the first time they are read."""
        tables: list[pa.Table] = []
        for slice_end in sorted(s for s in self._slices if start < s <= end):
            if slice_end in shared and slice_end not in self._compacted:
                self._slices[slice_end] = [self._merge(self._slices[slice_end])]
                self._compacted.add(slice_end)
            tables.extend(self._slices[slice_end])
        if not tables:
            return None
        merged = self._merge(tables)
        return merged.select([*self._keys, *(f.name for f in self._accumulators.fields)])

    def drop_through(self, ends: np.ndarray, last_window_ends: np.ndarray, end: int) -> None:
        """Forget the slices (of ``ends``) whose last window (``last_window_ends``) ends at or
        before ``end``: every window that could read them has fired."""
        for slice_end in ends[last_window_ends <= end].tolist():
            self._slices.pop(slice_end, None)
            self._compacted.discard(slice_end)

    def to_table(self) -> pa.Table:
        """All slices as one table of ``table_schema``, ordered by slice end."""
        tables = []
        for slice_end in sorted(self._slices):
            for chunk in self._slices[slice_end]:
                tables.append(chunk.add_column(
                    len(self._keys) + 1, SLICE_END,
                    pa.array(np.full(chunk.num_rows, slice_end, np.int64))))
        if not tables:
            return self.table_schema.empty_table()
        return pa.concat_tables(tables).cast(self.table_schema)

    def load(self, table: pa.Table) -> None:
        """Replace the content by ``table`` (columns of ``table_schema``)."""
        self._slices, self._compacted = {}, set()
        table = table.select(self.table_schema.names).cast(self.table_schema)
        ends = table.column(SLICE_END).to_numpy()
        self.add(table.drop_columns([SLICE_END]), ends)
        for slice_end, chunks in self._slices.items():
            # a snapshot concatenates a slice's tables: a key may have several rows in it
            self._slices[slice_end] = [self._merge(chunks, rows_per_key_unique=False)]

    def _merge(self, tables: list[pa.Table], rows_per_key_unique: bool = True) -> pa.Table:
        """One row per key (of ``schema``), ascending by the group keys.
        ``rows_per_key_unique``: each of ``tables`` holds at most one row per key (a
        single such table then needs no merging, only ordering)."""
        rows = pa.concat_tables(tables)
        if self._numpy_merge:
            merged = merge_sorted(rows, self._keys[0], self._accumulators.merge_parts,
                                  carry=[KEY_GROUP])
            if merged is not None:
                return merged.select(self.schema.names)
        if len(tables) > 1 or not rows_per_key_unique:
            rows = self._accumulators.merge(rows, [KEY_GROUP, *self._keys])
        if self._keys:
            rows = rows.take(pc.sort_indices(rows, [(k, "ascending") for k in self._keys]))
        return pa.Table.from_arrays(
            [rows.column(k) for k in [KEY_GROUP, *self._keys]]
            + [rows.column(f.name).cast(f.type) for f in self._accumulators.fields],
            schema=self.schema)
