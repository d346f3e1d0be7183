"""What identifies the data of a file-backed table: its files' paths, sizes and times.

Statistics carry the fingerprint of the files they describe; when a table's current
fingerprint differs (a file added, removed, rewritten or touched), its statistics are stale.
Computing one costs a directory listing and a ``stat`` per file, never a read, so it is
cheap enough to check whenever a query binds the table.
"""

from __future__ import annotations

import hashlib
import os

__all__ = ["files_fingerprint"]


def files_fingerprint(files: list[str]) -> str:
    """A short hex digest of ``files`` (path, size in bytes, modification time in ns), in
    the given order; "" for no files. A file that vanished while listing counts as changed
    data (it enters with size and time -1)."""
    if not files:
        return ""
    digest = hashlib.sha256()
    for path in files:
        try:
            status = os.stat(path)
            size, modified = status.st_size, status.st_mtime_ns
        except OSError:
            size, modified = -1, -1
        digest.update(f"{path}\t{size}\t{modified}\n".encode())
    return digest.hexdigest()[:32]
