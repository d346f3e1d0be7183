"""A processing-time clock a test moves by hand (``OperatorContext.processing_clock``)."""

from __future__ import annotations


class ManualClock:
    """Returns ``now`` (epoch milliseconds) until the test sets another time."""

    def __init__(self, now: int = 0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now
