"""Segment files and positions of a write-ahead log, as values (no I/O).

A log is a directory of segment files ``segment-<n>.wal`` (``<n>`` zero-padded to 20
digits, so names sort as numbers). Segments are written in increasing ``n`` and never
appended to once a newer one exists; a writer that opens a log starts a new segment
after the highest present, so a segment a crashed writer left (maybe torn) is never
written again.

A :class:`LogPosition` is a frame start: ``(segment, byte offset in that segment)``. An
offset at the end of a segment is the same place as offset 0 of the next one present.
Positions order as tuples, which is log order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_NAME = re.compile(r"segment-([0-9]{20})\.wal")


@dataclass(frozen=True, order=True)
class LogPosition:
    """A place in a log: the frame starting at byte ``offset`` of segment ``segment``."""

    segment: int
    offset: int

    def __post_init__(self) -> None:
        if self.segment < 0 or self.offset < 0:
            raise ValueError(f"a log position is not negative: {self}")


#: before everything a log can hold
LOG_START = LogPosition(0, 0)


def segment_name(segment: int) -> str:
    if segment < 0:
        raise ValueError(f"segment numbers are not negative, got {segment}")
    return f"segment-{segment:020d}.wal"


def segment_of(name: str) -> int | None:
    """The number of a segment file name; None for any other name (temporary files)."""
    found = _NAME.fullmatch(name)
    return int(found.group(1)) if found else None


def parse_segments(names: Iterable[str]) -> list[int]:
    """The segment numbers among file ``names``, ascending."""
    return sorted(n for n in map(segment_of, names) if n is not None)


def segments_to_delete(segments: Iterable[int], keep_from: LogPosition) -> list[int]:
    """The segments wholly before ``keep_from``: nothing at or after it is in them."""
    return [n for n in segments if n < keep_from.segment]
