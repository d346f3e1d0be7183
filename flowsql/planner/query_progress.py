"""How far a running bounded query has come: the figures the shell's progress line shows.

Both engines speak this one shape. The local runtime counts operators (plan nodes, each
finished when every subtask running it has finished) and the rows its table scans have
produced so far against the optimizer's estimate of what they will produce; Spark counts
the stages of its jobs. A figure an engine does not know is None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["ProgressSource", "QueryProgress"]


@dataclass(frozen=True)
class QueryProgress:
    """A moment of one query's run.

    ``operators_done``/``operators``: plan operators finished of all (local runtime).
    ``rows_read``: rows the table scans emitted so far, summed over subtasks;
    ``rows_estimated``: the optimizer's estimate of the rows those scans emit in all
    (None when the plan reads no table). ``stages_done``/``stages``: Spark's stages of the
    query's jobs, completed (or skipped) of those known so far.
    """

    operators_done: int | None = None
    operators: int | None = None
    rows_read: int | None = None
    rows_estimated: float | None = None
    stages_done: int | None = None
    stages: int | None = None


class ProgressSource(Protocol):
    """What follows one running query: its figures now, or None while it has none yet
    (Spark still starting)."""

    def snapshot(self) -> QueryProgress | None: ...
