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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.runtime.partitioning import key_groups
from flowsql.runtime.state.metadata import read_metadata, with_metadata
from flowsql.runtime.state.migration import conform

#: name of the column holding each row's key group
KEY_GROUP = "__key_group"
_KIND = "keyed_table"


class KeyedTableState:
    """Rows of ``schema`` (plus the leading ``KEY_GROUP`` int32 column) grouped by key group."""

    def __init__(self, name: str, schema: pa.Schema, max_parallelism: int,
                 migration_defaults: Mapping[str, Any] | None = None) -> None:
        if KEY_GROUP in schema.names:
            raise ExecutionError(f"state '{name}': column name {KEY_GROUP} is reserved")
        self.name = name
        self.max_parallelism = max_parallelism
        self.migration_defaults = dict(migration_defaults) if migration_defaults else None
        self.schema = pa.schema([pa.field(KEY_GROUP, pa.int32(), nullable=False), *schema])
        self._rows = self.schema.empty_table()

    def key_groups_of(self, keys: Sequence[pa.Array | pa.ChunkedArray], num_rows: int
                      ) -> np.ndarray:
        """Key group (int32) of every row; without key columns everything is key group 0."""
        if not keys:
            return np.zeros(num_rows, dtype=np.int32)
        return key_groups(keys, self.max_parallelism).astype(np.int32)

    @property
    def rows(self) -> pa.Table:
        return self._rows

    def __len__(self) -> int:
        return self._rows.num_rows

    def replace(self, rows: pa.Table) -> None:
        """Make ``rows`` (of exactly ``schema``) the whole content."""
        if not rows.schema.equals(self.schema):
            rows = rows.select(self.schema.names).cast(self.schema)
        self._rows = rows

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
        taken, kept = self.split(mask)
        self._rows = kept
        return taken

    def snapshot(self) -> pa.Table:
        """The rows as they are (in no particular order), with the state's metadata: O(1),
        since the table is immutable. It runs on the processing path at every checkpoint,
        so ordering by key group is left to whoever needs it off that path (the rocksdb
        backend groups rows itself; a restore filters by key group range)."""
        extra = ({"migration_defaults": self.migration_defaults}
                 if self.migration_defaults else {})
        return with_metadata(self._rows, _KIND, self.name, max_parallelism=self.max_parallelism,
                             **extra)

    def restore(self, snapshot: pa.Table, groups: range | None = None) -> None:
        """Content of ``snapshot`` restricted to key groups ``groups`` (None: all)."""
        description = read_metadata(snapshot, _KIND, self.name)
        if description.get("max_parallelism") != self.max_parallelism:
            raise ExecutionError(
                f"state '{self.name}' was written with max parallelism "
                f"{description.get('max_parallelism')} and cannot be restored with "
                f"{self.max_parallelism}")
        rows = conform(snapshot.replace_schema_metadata(None), self.schema,
                       self.migration_defaults)
        if groups is not None:
            owned = rows.column(KEY_GROUP)
            rows = rows.filter(pc.and_(pc.greater_equal(owned, groups.start),
                                       pc.less(owned, groups.stop)))
        self.replace(rows)
