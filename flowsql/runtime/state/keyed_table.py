"""Keyed table state: Arrow rows, each owned by the key group of its key.

Vectorized keyed state for operators that hold many small records per key (a window
aggregate holds one accumulator row per (key, window)). The rows are one Arrow table with
a ``KEY_GROUP`` column in front; every update replaces the table (Arrow data is immutable),
which is what makes ``snapshot`` free and safe: the snapshot shares buffers with live state
that will never be written again.

Contract:

* the key group of a row is ``partitioning.key_groups(key columns, max_parallelism)`` of the
  row's key, computed by the owner (``key_groups_of``); rows of one key always carry the
  same key group;
* ``snapshot`` returns an immutable table (rows in no particular order) with JSON metadata,
  without copying;
  ``restore`` accepts the concatenation of snapshots of any number of subtasks and keeps only
  the key groups asked for, which is all a rescaled restore needs;
* restoring requires the same ``max_parallelism`` (it fixes the key-group layout);
* ``migration_defaults`` (column -> JSON value) are the values a key restored from a
  snapshot without that column starts with (an aggregate function added by a query
  upgrade: ``state.migration``); they travel in the snapshot's metadata, so a savepoint
  check can tell which added columns a state can fill.

Time-to-live (``state.ttl``): a table created with a :class:`StateTtl` also keeps every row's
last write time, aligned with ``rows`` (``updated_at``) but outside them, so owners read and
build rows as without TTL. Rows that ``append`` or ``replace`` write are stamped with the
TTL's ``now``; an owner that puts back rows it did not change passes their old stamps
(``take_stamped`` hands them out). ``expire`` drops the rows that expired at ``now`` in one
vectorized filter, and costs nothing while the oldest stamp is live; the owner calls it
(through ``StateStore.expire``) before it reads, so expired rows are never seen. Snapshots
carry the stamps as an ``UPDATED_AT`` column; a restore drops the rows expired at restore
time, and a snapshot without the column (written before TTL was tracked) restores with every
row written at restore time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.runtime.partitioning import key_groups
from flowsql.runtime.state.metadata import check_max_parallelism, read_metadata, with_metadata
from flowsql.runtime.state.migration import conform
from flowsql.runtime.state.ttl import UPDATED_AT, StateTtl

#: name of the column holding each row's key group
KEY_GROUP = "__key_group"
_KIND = "keyed_table"


class KeyedTableState:
    """Rows of ``schema`` (plus the leading ``KEY_GROUP`` int32 column) grouped by key group;
    with ``ttl``, each row's last write time too (see the module docstring)."""

    def __init__(self, name: str, schema: pa.Schema, max_parallelism: int,
                 migration_defaults: Mapping[str, Any] | None = None,
                 ttl: StateTtl | None = None) -> None:
        for reserved in (KEY_GROUP, UPDATED_AT):
            if reserved in schema.names:
                raise ExecutionError(f"state '{name}': column name {reserved} is reserved")
        self.name = name
        self.max_parallelism = max_parallelism
        self.migration_defaults = dict(migration_defaults) if migration_defaults else None
        self.schema = pa.schema([pa.field(KEY_GROUP, pa.int32(), nullable=False), *schema])
        self.ttl = ttl
        self._rows = self.schema.empty_table()
        # write times aligned with ``_rows`` (only with ``ttl``); never modified in place,
        # so a snapshot may share the array
        self._updated = np.empty(0, dtype=np.int64)
        # a lower bound of ``_updated``: nothing can have expired while it is live
        self._oldest: int | None = None

    def key_groups_of(self, keys: Sequence[pa.Array | pa.ChunkedArray], num_rows: int
                      ) -> np.ndarray:
        """Key group (int32) of every row; without key columns everything is key group 0."""
        if not keys:
            return np.zeros(num_rows, dtype=np.int32)
        return key_groups(keys, self.max_parallelism).astype(np.int32)

    @property
    def rows(self) -> pa.Table:
        return self._rows

    @property
    def updated_at(self) -> np.ndarray:
        """Last write time of every row of ``rows`` (epoch ms; empty without ``ttl``)."""
        return self._updated

    def __len__(self) -> int:
        return self._rows.num_rows

    @property
    def nbytes(self) -> int:
        """Bytes the rows (and their write times) hold."""
        return int(self._rows.nbytes) + int(self._updated.nbytes)

    def replace(self, rows: pa.Table, updated_at: np.ndarray | None = None) -> None:
        """Make ``rows`` (of exactly ``schema``) the whole content; with ``ttl`` each row's
        write time is ``updated_at`` (aligned with ``rows``), by default now."""
        if not rows.schema.equals(self.schema):
            rows = rows.select(self.schema.names).cast(self.schema)
        self._rows = rows
        if self.ttl is not None:
            self._set_updated(self.ttl.stamps(rows.num_rows) if updated_at is None
                              else np.asarray(updated_at, dtype=np.int64))

    def append(self, rows: pa.Table, updated_at: np.ndarray | None = None) -> None:
        """Add ``rows`` (columns of ``schema``, by name) after the stored ones; with ``ttl``
        they are written now unless ``updated_at`` gives their write times."""
        if not rows.num_rows:
            return
        if not rows.schema.equals(self.schema):
            rows = rows.select(self.schema.names).cast(self.schema)
        self._rows = pa.concat_tables([self._rows, rows])
        if self.ttl is not None:
            added = (self.ttl.stamps(rows.num_rows) if updated_at is None
                     else np.asarray(updated_at, dtype=np.int64))
            self._updated = np.concatenate([self._updated, added])
            youngest_oldest = int(added.min())
            self._oldest = (youngest_oldest if self._oldest is None
                            else min(self._oldest, youngest_oldest))

    def update(self, rows: np.ndarray, columns: Mapping[str, pa.Array]) -> None:
        """Overwrite, at the distinct row numbers ``rows``, each named column with its
        values (aligned with ``rows``): the rows keep their place and their key (which
        owns their key group); with ``ttl`` they are written now. Costs one pass over each
        column, however few rows change, and no pass over the others."""
        if not len(rows):
            return
        rows = np.asarray(rows, dtype=np.int64)
        mask = np.zeros(self._rows.num_rows, dtype=bool)
        mask[rows] = True
        order = pa.array(np.argsort(rows, kind="stable"))
        for name, values in columns.items():
            index = self.schema.get_field_index(name)
            if index <= 0:
                raise ExecutionError(f"state '{self.name}': no column {name} to update")
            field = self.schema.field(index)
            column = pc.replace_with_mask(self._rows.column(index), pa.array(mask),
                                          values.take(order).cast(field.type))
            self._rows = self._rows.set_column(index, field, column)
        if self.ttl is not None:
            updated = self._updated.copy()  # a snapshot may share the old array
            updated[rows] = self.ttl.stamps(len(rows))
            self._updated = updated

    def in_key_groups(self, groups: np.ndarray) -> np.ndarray:
        """Boolean mask of the rows whose key group is one of ``groups``."""
        owned = self._rows.column(KEY_GROUP)
        # a linear probe into a hash set of the few groups, not a sort of the whole state
        found = pc.is_in(owned, value_set=pa.array(groups, owned.type))
        return found.to_numpy(zero_copy_only=False)

    def split(self, mask: np.ndarray) -> tuple[pa.Table, pa.Table]:
        """(rows where ``mask``, the other rows), both in their stored order."""
        selected = pa.array(mask, pa.bool_())
        return self._rows.filter(selected), self._rows.filter(pc.invert(selected))

    def take(self, mask: np.ndarray) -> pa.Table:
        """Remove and return the rows where ``mask`` is true."""
        return self.take_stamped(mask)[0]

    def take_stamped(self, mask: np.ndarray) -> tuple[pa.Table, np.ndarray]:
        """Remove and return the rows where ``mask`` is true, with their write times (empty
        without ``ttl``)."""
        taken, kept = self.split(mask)
        self._rows = kept
        if self.ttl is None:
            return taken, np.empty(0, dtype=np.int64)
        mask = np.asarray(mask, dtype=bool)
        stamps = self._updated[mask]
        self._updated = self._updated[~mask]
        return taken, stamps

    def expire(self) -> int:
        """Drop the rows expired at the TTL's ``now``; the number dropped."""
        ttl = self.ttl
        if ttl is None or not ttl.enabled or self._oldest is None or self._oldest > ttl.cutoff:
            return 0
        live = ttl.live(self._updated)
        dropped = int(len(live) - np.count_nonzero(live))
        if dropped:
            self._rows = self._rows.filter(pa.array(live, pa.bool_()))
            self._updated = self._updated[live]
        self._oldest = int(self._updated.min()) if len(self._updated) else None
        return dropped

    def snapshot(self) -> pa.Table:
        """The rows as they are (in no particular order), with the state's metadata: O(1),
        since the table is immutable. It runs on the processing path at every checkpoint,
        so ordering by key group is left to whoever needs it off that path (the rocksdb
        backend groups rows itself; a restore filters by key group range). With ``ttl`` the
        write times travel as the last column, ``UPDATED_AT``."""
        rows = self._rows
        if self.ttl is not None:
            rows = rows.append_column(pa.field(UPDATED_AT, pa.int64(), nullable=False),
                                      pa.array(self._updated, pa.int64()))
        extra = ({"migration_defaults": self.migration_defaults}
                 if self.migration_defaults else {})
        return with_metadata(rows, _KIND, self.name, max_parallelism=self.max_parallelism,
                             **extra)

    def restore(self, snapshot: pa.Table, groups: range | None = None) -> None:
        """Content of ``snapshot`` restricted to key groups ``groups`` (None: all), without
        the rows that expired by now (see the module docstring)."""
        read_metadata(snapshot, _KIND, self.name)
        check_max_parallelism(snapshot, self.name, self.max_parallelism)
        rows = snapshot.replace_schema_metadata(None)
        if groups is not None:
            owned = rows.column(KEY_GROUP)
            rows = rows.filter(pc.and_(pc.greater_equal(owned, groups.start),
                                       pc.less(owned, groups.stop)))
        stamps = None
        if UPDATED_AT in rows.schema.names:
            column = rows.column(UPDATED_AT)
            stamps = column.to_numpy().astype(np.int64, copy=False)
            rows = rows.drop_columns([UPDATED_AT])
        rows = conform(rows, self.schema, self.migration_defaults)
        if self.ttl is not None:
            self.ttl.tick()
        self.replace(rows, stamps)
        self.expire()

    def _set_updated(self, stamps: np.ndarray) -> None:
        if len(stamps) != self._rows.num_rows:
            raise ExecutionError(f"state '{self.name}': {len(stamps)} write times for "
                                 f"{self._rows.num_rows} rows")
        self._updated = stamps
        self._oldest = int(stamps.min()) if len(stamps) else None
