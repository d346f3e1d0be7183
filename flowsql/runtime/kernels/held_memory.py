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

    def try_hold(self, nbytes: int) -> bool:
        """Hold ``nbytes`` if the budget has room; False (nothing held) if not, which is
        a spilling operator's cue to spill."""
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
