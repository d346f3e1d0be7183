"""Watching a filesystem table's directory: the unbounded filesystem source.

With Flink's option ``'source.monitor-interval'`` (e.g. ``'1 s'``) a filesystem table is
not a fixed set of files but a directory that keeps growing: every interval the directory
is listed again and every file not seen before is read, completely, in name order; a file
is read once even if it changes later (as in Flink, writers are expected to create files
atomically -- our filesystem sink renames a finished hidden file into place). Hidden files
(names starting with '.' or '_', at any depth) are never read, which is what makes
in-progress and marker files invisible. A directory that does not exist yet is an empty
directory: it may be created by a writer later.

This module is the connector side (interval syntax, listing); the reading, state and
polling live in ``flowsql.runtime.operators.source.watched_scan``.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

from flowsql.errors import CatalogError

MONITOR_INTERVAL = "source.monitor-interval"

_DURATION_UNITS = {
    "ns": 1e-9, "nano": 1e-9, "nanos": 1e-9, "nanosecond": 1e-9, "nanoseconds": 1e-9,
    "us": 1e-6, "µs": 1e-6, "micro": 1e-6, "micros": 1e-6, "microsecond": 1e-6,
    "microseconds": 1e-6,
    "ms": 1e-3, "milli": 1e-3, "millis": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
}


def parse_duration(text: str) -> float:
    """Seconds of a Flink duration (``'1 s'``, ``'500 ms'``, ``'1 min'``, ``'2h'``); a bare
    number means milliseconds, as in Flink's ``TimeUtils.parseDuration``."""
    match = re.fullmatch(r"\s*(\d+)\s*([^\d\s]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or (unit and unit not in _DURATION_UNITS):
        raise CatalogError(f"invalid duration '{text}' (expected e.g. '1 s', '500 ms', "
                           "'1 min')")
    seconds = int(match.group(1)) * (_DURATION_UNITS[unit] if unit else 1e-3)
    if seconds <= 0:
        raise CatalogError(f"'{MONITOR_INTERVAL}' must be positive, got '{text}'")
    return seconds


def monitor_interval(options: dict[str, str]) -> float | None:
    """The table's watch interval in seconds, or None for a bounded (unwatched) table."""
    text = options.get(MONITOR_INTERVAL)
    return None if text is None else parse_duration(text)


def visible_files(directory: str) -> list[str]:
    """The readable files under ``directory``, relative to it, in name order; nothing when
    it does not exist (yet). ``directory`` may also name one file."""
    root = Path(directory)
    if root.is_file():
        return [root.name]
    if not root.is_dir():
        return []
    names = []
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if not any(part.startswith((".", "_")) for part in relative.parts) and path.is_file():
            names.append(relative.as_posix())
    return sorted(names)


def owner(name: str, parallelism: int) -> int:
    """The subtask that reads file ``name``: a stable hash (the same in every process and
    after a restart), so parallel subtasks split the files without talking to each other."""
    return zlib.crc32(name.encode("utf-8")) % parallelism


def resolve(directory: str, name: str) -> str:
    """The path of ``name`` as listed by :func:`visible_files` for ``directory``."""
    root = Path(directory)
    return str(root if root.is_file() else root / name)
