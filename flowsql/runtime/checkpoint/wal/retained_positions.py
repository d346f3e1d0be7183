"""Which part of a source's write-ahead log the retained checkpoints still need (pure).

A source records its log position in every snapshot; positions grow with checkpoint ids.
A restore can start from any retained checkpoint, so a segment may be deleted only when
it lies wholly before the position of the oldest retained one. The coordinator keeps the
``num_retained`` newest *completed* checkpoints; the source knows a checkpoint completed
only from its notification (or because it was restored from it). Notifications can be
lost or skipped, so the source's known completed checkpoints are a subset of the real
ones, and the ``num_retained``-th newest it knows is never newer than the oldest really
retained: deleting before its position is safe. Knowing fewer than ``num_retained``,
nothing is deleted.
"""

from __future__ import annotations

from typing import Generic, TypeVar

#: a position in a log: anything recorded per checkpoint (a ``LogPosition``, or a log's
#: name with one); the bookkeeping only hands it back
Position = TypeVar("Position")


class RetainedPositions(Generic[Position]):
    """The positions of taken and completed checkpoints of one source subtask."""

    def __init__(self, num_retained: int) -> None:
        if num_retained < 1:
            raise ValueError(f"at least one checkpoint is retained, not {num_retained}")
        self.num_retained = num_retained
        self._pending: dict[int, Position] = {}
        #: (checkpoint id, position) of completed checkpoints, oldest first
        self._completed: list[tuple[int, Position]] = []

    def taken(self, checkpoint_id: int, position: Position) -> None:
        """A snapshot recorded ``position`` for ``checkpoint_id``."""
        self._pending[checkpoint_id] = position

    def restored(self, checkpoint_id: int, position: Position) -> None:
        """The run was restored from ``checkpoint_id``, which completed."""
        self._complete(checkpoint_id, position)

    def completed(self, checkpoint_id: int) -> Position | None:
        """Checkpoint ``checkpoint_id`` completed: the position before which no retained
        checkpoint needs the log, or None when that is not known (yet)."""
        position = self._pending.pop(checkpoint_id, None)
        for older in [c for c in self._pending if c < checkpoint_id]:
            del self._pending[older]  # subsumed; if it completed unnoticed, see above
        if position is not None:
            self._complete(checkpoint_id, position)
        return self.keep_from()

    def keep_from(self) -> Position | None:
        if len(self._completed) < self.num_retained:
            return None
        return self._completed[-self.num_retained][1]

    def _complete(self, checkpoint_id: int, position: Position) -> None:
        if any(c == checkpoint_id for c, _ in self._completed):
            return
        self._completed.append((checkpoint_id, position))
        self._completed.sort(key=lambda entry: entry[0])
        del self._completed[:-self.num_retained]
