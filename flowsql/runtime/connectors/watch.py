"""Watching a filesystem table's directory: the unbounded filesystem source.

With Flink's option ``'source.monitor-interval'`` (e.g. ``'1 s'``) a filesystem table is
not a fixed set of files but a directory that keeps growing: every interval the directory
is listed again and every file not seen before is read, completely, in name order; a file
is read once even if it changes later (as in Flink, writers are expected to create files
atomically -- our filesystem sink renames a finished hidden file into place). Hidden files
(names starting with '.' or '_', at any depth) are never read, which is what makes
in-progress and marker files invisible. A directory that does not exist yet is an empty
directory: it may be created by a writer later.

This module is the connector side (the interval, listing); the reading, state and
polling live in ``flowsql.runtime.operators.source.watched_scan``.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from flowsql.planner.config.connectors import FILESYSTEM

MONITOR_INTERVAL = "source.monitor-interval"

def monitor_interval(options: dict[str, str]) -> float | None:
    """The table's watch interval in seconds, or None for a bounded (unwatched) table."""
    millis = FILESYSTEM.value(options, MONITOR_INTERVAL)
    return None if millis is None else millis / 1000


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
