"""An event-time operator's progress: its watermark and the counter it draws ids from.

Kept as union list state (every subtask's row goes to every subtask on restore), and
restored as the *minimum* watermark -- a rescaled subtask then treats nothing as late that
any old subtask would not have -- and the *maximum* counter, so ids handed out after a
restore never repeat one from before.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.state.store import StateStore

_SCHEMA = pa.schema([("watermark", pa.int64()), ("next_counter", pa.int64())])


class EventTimeProgress:
    """Created in ``open`` from the operator's store; ``save`` before the store's snapshot,
    ``restored`` after the store's restore."""

    def __init__(self, store: StateStore) -> None:
        self._state = store.list_state("progress", _SCHEMA, "union")

    def save(self, watermark: int, counter: int = 0) -> None:
        self._state.update(pa.table({"watermark": [watermark], "next_counter": [counter]},
                                    schema=_SCHEMA))

    def restored(self) -> tuple[int, int] | None:
        """(watermark, counter) to resume from, or None when nothing was saved."""
        rows = self._state.rows
        if not rows.num_rows:
            return None
        return (int(pc.min(rows.column("watermark")).as_py()),
                int(pc.max(rows.column("next_counter")).as_py()))
