"""Operator list state: non-keyed Arrow rows of one subtask, redistributed on rescale.

Operator state has no key, so a rescaled restore cannot route it by key group. As in
Flink, the owner chooses how entries are redistributed when the snapshots of all old
subtasks are concatenated and handed to each new subtask:

* ``split``: entry ``i`` goes to new subtask ``i % parallelism`` (each entry lives on
  exactly one subtask afterwards: source splits, pending files);
* ``union``: every new subtask gets every entry and reduces them itself (a watermark or a
  counter that must be combined, e.g. with ``min``).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.runtime.state.metadata import read_metadata, with_metadata

Distribution = Literal["split", "union"]
#: the state kind recorded in a list state snapshot's metadata
LIST_KIND = "operator_list"
_KIND = LIST_KIND


class OperatorListState:
    """A list of rows of ``schema``; see the module docstring for redistribution."""

    def __init__(self, name: str, schema: pa.Schema, distribution: Distribution) -> None:
        if distribution not in ("split", "union"):
            raise ExecutionError(f"state '{name}': unknown distribution {distribution!r}")
        self.name = name
        self.schema = schema
        self.distribution = distribution
        self._rows = schema.empty_table()

    @property
    def rows(self) -> pa.Table:
        return self._rows

    def update(self, rows: pa.Table) -> None:
        """Replace the whole list."""
        self._rows = rows.select(self.schema.names).cast(self.schema)

    def add(self, rows: pa.Table) -> None:
        self._rows = pa.concat_tables([self._rows, rows.select(self.schema.names)
                                      .cast(self.schema)])

    def snapshot(self) -> pa.Table:
        return with_metadata(self._rows.combine_chunks(), _KIND, self.name,
                             distribution=self.distribution)

    def restore(self, snapshot: pa.Table, subtask: int = 0, parallelism: int = 1) -> None:
        """This subtask's share of the concatenated snapshots of all old subtasks."""
        read_metadata(snapshot, _KIND, self.name)
        rows = snapshot.replace_schema_metadata(None)
        if self.distribution == "split" and parallelism > 1:
            mine = np.arange(rows.num_rows) % parallelism == subtask
            rows = rows.filter(pa.array(mine))
        self.update(rows)
