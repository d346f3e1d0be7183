"""One operator's state: named keyed tables, list states and timer services, snapshotted
and restored as a unit.

An operator creates its states once (in ``open``) through the store and keeps no other
mutable attributes that matter for recovery; ``snapshot`` then captures everything and
``restore`` inverts it. Snapshot tables are named ``<kind>/<state name>``; a rescaled restore
passes, per name, the concatenation of that table from every old subtask (``merge_snapshots``),
and the store keeps this subtask's key groups (keyed state, timers) or its share of list
state. The subtask's key groups follow from ``partitioning.key_group_range``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import SettingValues
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.partitioning import DEFAULT_MAX_PARALLELISM, key_group_range
from flowsql.runtime.state.keyed_table import KeyedTableState
from flowsql.runtime.state.list_state import LIST_KIND, Distribution, OperatorListState
from flowsql.runtime.state.metadata import METADATA_KEY, check_max_parallelism
from flowsql.runtime.time.timers import TimerService


class StateStore:
    """The states of one subtask of one operator."""

    def __init__(self, subtask_index: int = 0, parallelism: int = 1,
                 max_parallelism: int = DEFAULT_MAX_PARALLELISM) -> None:
        self.subtask_index = subtask_index
        self.parallelism = parallelism
        self.max_parallelism = max_parallelism
        self.key_groups = key_group_range(subtask_index, parallelism, max_parallelism)
        self._keyed: dict[str, KeyedTableState] = {}
        self._lists: dict[str, OperatorListState] = {}
        self._timers: dict[str, TimerService] = {}

    @classmethod
    def for_context(cls, context: OperatorContext) -> StateStore:
        """The store of the subtask ``context`` describes, with the job's
        ``max_parallelism`` (the number of key groups)."""
        max_parallelism = SettingValues(context.settings).integer("max_parallelism")
        return cls(context.subtask_index, context.parallelism, max_parallelism)

    def keyed_table(self, name: str, schema: pa.Schema) -> KeyedTableState:
        self._check_new(name, self._keyed)
        state = self._keyed[name] = KeyedTableState(name, schema, self.max_parallelism)
        return state

    def list_state(self, name: str, schema: pa.Schema,
                   distribution: Distribution) -> OperatorListState:
        self._check_new(name, self._lists)
        state = self._lists[name] = OperatorListState(name, schema, distribution)
        return state

    def timers(self, name: str) -> TimerService:
        self._check_new(name, self._timers)
        service = self._timers[name] = TimerService(name, self.max_parallelism)
        return service

    def snapshot(self) -> dict[str, pa.Table]:
        tables = {f"keyed/{n}": s.snapshot() for n, s in self._keyed.items()}
        tables.update({f"list/{n}": s.snapshot() for n, s in self._lists.items()})
        tables.update({f"timers/{n}": s.snapshot() for n, s in self._timers.items()})
        return tables

    def restore(self, tables: dict[str, pa.Table]) -> None:
        """Restore every registered state from ``tables``; a missing table means empty state
        (an operator added by an upgrade), an unknown table is an error (a state dropped by
        an upgrade would be silently lost), and so is a keyed or timer table written with
        another ``max_parallelism`` (``metadata.check_max_parallelism``)."""
        known = ({f"keyed/{n}" for n in self._keyed} | {f"list/{n}" for n in self._lists}
                 | {f"timers/{n}" for n in self._timers})
        unknown = sorted(set(tables) - known)
        if unknown:
            raise ExecutionError(f"snapshot holds state this operator does not know: {unknown}")
        for name, table in tables.items():
            check_max_parallelism(table, name, self.max_parallelism)
        for name, keyed in self._keyed.items():
            if f"keyed/{name}" in tables:
                keyed.restore(tables[f"keyed/{name}"], self.key_groups)
        for name, listed in self._lists.items():
            if f"list/{name}" in tables:
                listed.restore(tables[f"list/{name}"], self.subtask_index, self.parallelism)
        for name, service in self._timers.items():
            if f"timers/{name}" in tables:
                service.restore(tables[f"timers/{name}"], self.key_groups)

    @staticmethod
    def _check_new(name: str, states: Mapping[str, object]) -> None:
        if name in states:
            raise ExecutionError(f"state '{name}' is registered twice")


def merge_snapshots(snapshots: Sequence[dict[str, pa.Table]]) -> dict[str, pa.Table]:
    """Concatenate, per state name, the snapshots of several subtasks (rescaled restore)."""
    merged: dict[str, list[pa.Table]] = {}
    for snapshot in snapshots:
        for name, table in snapshot.items():
            merged.setdefault(name, []).append(table)
    return {name: _concat(tables) for name, tables in merged.items()}


def with_union_lists(own: dict[str, pa.Table], everyone: Sequence[dict[str, pa.Table]]
                     ) -> dict[str, pa.Table]:
    """A restore at the snapshot's parallelism: a subtask keeps its own tables, except that
    every ``union`` list state becomes the concatenation over all old subtasks (every
    subtask sees every entry, whatever the parallelism)."""
    union = [name for name, table in own.items() if is_union_list(table)]
    if not union:
        return own
    merged = dict(own)
    for name in union:
        merged[name] = _concat([snapshot[name] for snapshot in everyone if name in snapshot])
    return merged


def is_union_list(table: pa.Table) -> bool:
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        return False
    description = json.loads(raw)
    return bool(description.get("kind") == LIST_KIND and description.get("distribution") == "union")


def _concat(tables: list[pa.Table]) -> pa.Table:
    metadata = tables[0].schema.metadata
    return pa.concat_tables([t.replace_schema_metadata(metadata) for t in tables])
