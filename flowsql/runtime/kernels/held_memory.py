"""Accounting of the bytes a blocking operator holds, against the job's memory budget."""

from __future__ import annotations

from flowsql.runtime.operator import OperatorContext


class HeldMemory:
    """Bytes one operator holds; ``hold`` may raise ResourceExhausted, ``release_all``
    returns everything (called when the held data is emitted or the operator closes)."""

    def __init__(self, context: OperatorContext) -> None:
        self._context = context
        self._held = 0

    def hold(self, nbytes: int) -> None:
        self._held += nbytes
        self._context.memory.reserve(nbytes, self._context.name)

    def release_all(self) -> None:
        self._context.memory.release(self._held)
        self._held = 0
