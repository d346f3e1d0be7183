"""Event-time timers, vectorized over many keys, owned by (and snapshotted with) keyed state.

A timer is ``(key_group, namespace, timestamp)``: the owner chooses an int64 ``namespace``
that identifies what the timer is for (a window aggregate uses one window id per (key,
window), unique within the operator), and the key group ties the timer to the keyed state
it belongs to, so a rescaled restore moves timers together with that state.

Contract:

* registering the same ``(namespace, timestamp)`` twice keeps one timer (as Flink does);
* ``advance(watermark)`` removes and returns every timer with ``timestamp <= watermark``
  ordered by ``(timestamp, namespace)``: event time has passed them, so they fire exactly
  once; timers with a later timestamp stay;
* ``snapshot`` / ``restore`` behave like keyed table state (immutable Arrow table with JSON
  metadata; restore may keep only a range of key groups).

Timers are kept as three numpy columns sorted by timestamp, so ``advance`` is a binary
search plus slices; registrations are appended and sorted lazily once per ``advance``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from flowsql.runtime.state.keyed_table import KEY_GROUP
from flowsql.runtime.state.metadata import check_max_parallelism, read_metadata, with_metadata

_KIND = "timers"
TIMER_SCHEMA = pa.schema([pa.field(KEY_GROUP, pa.int32(), nullable=False),
                          pa.field("namespace", pa.int64(), nullable=False),
                          pa.field("timestamp", pa.int64(), nullable=False)])


class TimerService:
    """Event-time timers of one operator; see the module docstring."""

    def __init__(self, name: str, max_parallelism: int) -> None:
        self.name = name
        self.max_parallelism = max_parallelism
        self._groups = np.empty(0, np.int32)
        self._namespaces = np.empty(0, np.int64)
        self._timestamps = np.empty(0, np.int64)
        self._sorted = True

    def __len__(self) -> int:
        return len(self._timestamps)

    def register(self, key_groups: np.ndarray, namespaces: np.ndarray,
                 timestamps: np.ndarray) -> None:
        if not len(timestamps):
            return
        self._groups = np.concatenate((self._groups, np.asarray(key_groups, np.int32)))
        self._namespaces = np.concatenate((self._namespaces, np.asarray(namespaces, np.int64)))
        self._timestamps = np.concatenate((self._timestamps, np.asarray(timestamps, np.int64)))
        self._sorted = False

    def delete(self, namespaces: np.ndarray) -> None:
        """Drop every timer of the given namespaces (e.g. sessions merged into another)."""
        if not len(namespaces) or not len(self._namespaces):
            return
        keep = ~np.isin(self._namespaces, namespaces)
        self._groups, self._namespaces, self._timestamps = (
            self._groups[keep], self._namespaces[keep], self._timestamps[keep])

    def next_timestamp(self) -> int | None:
        """The earliest pending timer's timestamp."""
        if not len(self._timestamps):
            return None
        self._sort()
        return int(self._timestamps[0])

    def advance(self, watermark: int) -> pa.Table:
        """Remove and return the due timers (``timestamp <= watermark``) in firing order."""
        self._sort()
        due = int(np.searchsorted(self._timestamps, watermark, side="right"))
        fired = self._table(slice(0, due))
        self._groups, self._namespaces, self._timestamps = (
            self._groups[due:], self._namespaces[due:], self._timestamps[due:])
        return fired

    def snapshot(self) -> pa.Table:
        self._sort()
        return with_metadata(self._table(slice(None)), _KIND, self.name,
                             max_parallelism=self.max_parallelism)

    def restore(self, snapshot: pa.Table, groups: range | None = None) -> None:
        read_metadata(snapshot, _KIND, self.name)
        check_max_parallelism(snapshot, f"timers {self.name}", self.max_parallelism)
        owned = snapshot.column(KEY_GROUP).to_numpy()
        keep = (np.ones(len(owned), bool) if groups is None
                else (owned >= groups.start) & (owned < groups.stop))
        self._groups = owned[keep].astype(np.int32)
        self._namespaces = snapshot.column("namespace").to_numpy()[keep].astype(np.int64)
        self._timestamps = snapshot.column("timestamp").to_numpy()[keep].astype(np.int64)
        self._sorted = False

    def _sort(self) -> None:
        if self._sorted:
            return
        order = np.lexsort((self._namespaces, self._timestamps))
        groups, namespaces, timestamps = (
            self._groups[order], self._namespaces[order], self._timestamps[order])
        distinct = np.ones(len(order), bool)
        distinct[1:] = (namespaces[1:] != namespaces[:-1]) | (timestamps[1:] != timestamps[:-1])
        self._groups, self._namespaces, self._timestamps = (
            groups[distinct], namespaces[distinct], timestamps[distinct])
        self._sorted = True

    def _table(self, rows: slice) -> pa.Table:
        return pa.Table.from_arrays(
            [pa.array(self._groups[rows]), pa.array(self._namespaces[rows]),
             pa.array(self._timestamps[rows])], schema=TIMER_SCHEMA)
