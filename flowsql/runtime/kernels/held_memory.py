"""Accounting of the bytes a blocking operator holds, against the job's memory budget."""

from __future__ import annotations

from flowsql.runtime.operator import OperatorContext


class HeldMemory:
    """Bytes one operator holds; ``hold`` may raise ResourceExhausted, ``try_hold`` returns
    False instead, ``release_all`` returns everything (called when the held data is emitted
    or the operator closes)."""

    def __init__(self, context: OperatorContext) -> None:
        self._context = context
        self._held = 0

    def hold(self, nbytes: int) -> None:
        self._held += nbytes
        self._context.memory.reserve(nbytes, self._context.name)

    def try_hold(self, nbytes: int, beyond_share: bool = False) -> bool:
        """Hold ``nbytes`` if this operator's share of the budget and the budget itself
        have room; False (nothing held) if not, which is a spilling operator's cue to
        spill. ``beyond_share`` asks only the budget itself: the last resort of an
        operator whose data cannot be split any further (one key, one group), for the
        short while it works on that piece."""
        share = self._context.memory.share
        if not beyond_share and share is not None and self._held + nbytes > share:
            return False
        if self._context.memory.try_reserve(nbytes):
            self._held += nbytes
            return True
        return False

    def release(self, nbytes: int) -> None:
        """Give back ``nbytes`` of what is held (after spilling part of it)."""
        nbytes = min(nbytes, self._held)
        self._held -= nbytes
        self._context.memory.release(nbytes)

    @property
    def held(self) -> int:
        return self._held

    def release_all(self) -> None:
        self._context.memory.release(self._held)
        self._held = 0
