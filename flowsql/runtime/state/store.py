"""One operator's state: named keyed tables, list states and timer services, snapshotted
and restored as a unit.

An operator creates its states once (in ``open``) through the store and keeps no other
mutable attributes that matter for recovery; ``snapshot`` then captures everything and
``restore`` inverts it. Snapshot tables are named ``<kind>/<state name>``; a rescaled restore
passes, per name, the concatenation of that table from every old subtask (``merge_snapshots``),
and the store keeps this subtask's key groups (keyed state, timers) or its share of list
state. The subtask's key groups follow from ``partitioning.key_group_range``.

Time-to-live: keyed tables created with ``expires=True`` keep their rows' write times and
expire them after the store's ``ttl`` (``state.ttl``; from ``table.exec.state.ttl`` for a
store made ``for_context``). The owner calls ``expire`` before it reads state for a batch;
``snapshot`` sweeps too, so an idle operator's snapshots do not carry expired rows.

Size: a store made ``for_context`` reports the rows and bytes of its keyed tables as the
operator's ``state_rows`` and ``state_bytes`` metrics (gauges read when metrics are asked for).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner.config.settings import SettingValues
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.partitioning import DEFAULT_MAX_PARALLELISM, key_group_range
from flowsql.runtime.state.keyed_table import KeyedTableState
from flowsql.runtime.state.list_state import LIST_KIND, Distribution, OperatorListState
from flowsql.runtime.state.metadata import METADATA_KEY
from flowsql.runtime.state.ttl import StateTtl
from flowsql.runtime.time.timers import TimerService


class StateStore:
    """The states of one subtask of one operator."""

    def __init__(self, subtask_index: int = 0, parallelism: int = 1,
                 max_parallelism: int = DEFAULT_MAX_PARALLELISM,
                 ttl: StateTtl | None = None) -> None:
        self.subtask_index = subtask_index
        self.parallelism = parallelism
        self.max_parallelism = max_parallelism
        self.key_groups = key_group_range(subtask_index, parallelism, max_parallelism)
        self._keyed: dict[str, KeyedTableState] = {}
        self._lists: dict[str, OperatorListState] = {}
        self._timers: dict[str, TimerService] = {}
        self.ttl = ttl if ttl is not None else StateTtl()
        # where the size is reported once the first keyed table exists (an operator with
        # only list state -- a source -- reports no keyed state size)
        self._gauges: MutableMapping[str, Callable[[], int]] | None = None

    @classmethod
    def for_context(cls, context: OperatorContext,
                    max_parallelism: int | None = None) -> StateStore:
        """The store of the subtask ``context`` describes, with the job's
        ``max_parallelism`` (the number of key groups) unless given, the job's state TTL
        on the context's processing-time clock, reporting its size in the context's
        gauges."""
        if max_parallelism is None:
            max_parallelism = SettingValues(context.settings).integer("max_parallelism")
        store = cls(context.subtask_index, context.parallelism, max_parallelism,
                    StateTtl.from_settings(context.settings, context.processing_clock))
        store._gauges = context.gauges
        return store

    def keyed_table(self, name: str, schema: pa.Schema, expires: bool = False,
                    migration_defaults: Mapping[str, Any] | None = None) -> KeyedTableState:
        """A new keyed table; with ``expires`` its rows expire after the store's ``ttl``;
        ``migration_defaults`` see ``KeyedTableState``."""
        self._check_new(name, self._keyed)
        if not self._keyed and self._gauges is not None:
            self.report_size(self._gauges)
        state = self._keyed[name] = KeyedTableState(name, schema, self.max_parallelism,
                                                    migration_defaults,
                                                    self.ttl if expires else None)
        return state

    def expire(self) -> int:
        """Read the processing-time clock and drop the expired rows of every expiring keyed
        table: what an owner calls before it reads state. The number of rows dropped."""
        self.ttl.tick()
        return sum(state.expire() for state in self._keyed.values())

    # -- size -----------------------------------------------------------------------------

    def keyed_rows(self) -> int:
        return sum(len(state) for state in self._keyed.values())

    def keyed_bytes(self) -> int:
        return sum(state.nbytes for state in self._keyed.values())

    def report_size(self, gauges: MutableMapping[str, Callable[[], int]]) -> None:
        """Add this store's keyed rows and bytes to the ``state_rows`` and ``state_bytes``
        gauges (summed with any other store of the same operator)."""
        add_to_gauge(gauges, "state_rows", self.keyed_rows)
        add_to_gauge(gauges, "state_bytes", self.keyed_bytes)

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
        self.expire()
        tables = {f"keyed/{n}": s.snapshot() for n, s in self._keyed.items()}
        tables.update({f"list/{n}": s.snapshot() for n, s in self._lists.items()})
        tables.update({f"timers/{n}": s.snapshot() for n, s in self._timers.items()})
        return tables

    def restore(self, tables: dict[str, pa.Table]) -> None:
        """Restore every registered state from ``tables``; a missing table means empty state
        (a state added by an upgrade). A table no registered state claims is left out: a
        restore from a savepoint is checked before the job starts
        (``checkpoint.compatibility``), which refuses unclaimed state unless
        ``execution.savepoint.ignore-unclaimed-state`` allows dropping it, and a restart
        restores the job's own checkpoints, whose states are exactly the registered ones.
        A keyed or timer table written with another ``max_parallelism`` is an error (the
        tables check it themselves: ``metadata.check_max_parallelism``)."""
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


def add_to_gauge(gauges: MutableMapping[str, Callable[[], int]], name: str,
                 measure: Callable[[], int]) -> None:
    """Make gauge ``name`` also count ``measure`` (state an operator holds outside its
    store, e.g. a window aggregate's slices, reports its size this way)."""
    counted = gauges.get(name)
    gauges[name] = measure if counted is None else (lambda: counted() + measure())


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
