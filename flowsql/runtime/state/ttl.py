"""State time-to-live: keyed rows expire a fixed processing-time interval after their last
write (Flink's ``table.exec.state.ttl``: update type on create and write, expired state
never returned, processing time).

A keyed table created with a :class:`StateTtl` keeps, next to every row, the processing time
(epoch milliseconds) the row was last written (``UPDATED_AT``). A row is *live* while
``updated_at + interval > now`` -- Flink's expiry test ``last access + ttl <= now`` negated;
with an interval of 0 nothing expires, but the write times are still kept, so a job that
later turns TTL on (or restores with it) knows how old its rows are.

``now`` is read from the clock once per access (``tick``), not per row: every row an operator
writes while processing one batch gets the same time, and the set of live rows cannot change
under an operator in the middle of a batch. The clock never goes back (a clock adjustment
could otherwise make written rows younger than rows written after them). The clock is
injectable so tests fix it; it reads the wall clock the way ``PROCTIME()`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from flowsql.planner.config.settings import SettingValues
from flowsql.runtime.time.watermarks import epoch_ms

#: the setting holding the interval (a duration; 0: state never expires)
TTL_SETTING = "table.exec.state.ttl"
#: name of the column holding each row's last write time in a keyed table's snapshot
UPDATED_AT = "__updated_at"

#: a processing-time clock in epoch milliseconds
Clock = Callable[[], int]


class StateTtl:
    """The time-to-live of one operator's keyed state and its processing-time clock."""

    def __init__(self, interval_ms: int = 0, clock: Clock = epoch_ms) -> None:
        if interval_ms < 0:
            raise ValueError(f"state time-to-live must not be negative, got {interval_ms} ms")
        self.interval_ms = interval_ms
        self._clock = clock
        self.now = int(clock())

    @classmethod
    def from_settings(cls, settings: Mapping[str, str], clock: Clock = epoch_ms) -> StateTtl:
        return cls(SettingValues(dict(settings)).duration_ms(TTL_SETTING), clock)

    @property
    def enabled(self) -> bool:
        return self.interval_ms > 0

    def tick(self) -> int:
        """Read the clock (never going back) and make it the time of what follows."""
        self.now = max(self.now, int(self._clock()))
        return self.now

    @property
    def cutoff(self) -> int:
        """Rows last written at or before this time have expired (meaningful when enabled)."""
        return self.now - self.interval_ms

    def live(self, updated_at: np.ndarray) -> np.ndarray:
        """Boolean mask of the write times that have not expired at ``now``."""
        if not self.enabled:
            return np.ones(len(updated_at), dtype=bool)
        return np.asarray(updated_at > self.cutoff)

    def stamps(self, num_rows: int) -> np.ndarray:
        """Write times for ``num_rows`` rows written now."""
        return np.full(num_rows, self.now, dtype=np.int64)
