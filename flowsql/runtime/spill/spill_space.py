"""Where one job's spill files live, and their removal."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import uuid
from collections.abc import Sequence

from flowsql.errors import ResourceExhausted


def parse_tmp_dirs(text: str | None) -> tuple[str, ...]:
    """The directories of an ``io.tmp.dirs`` value: separated by commas or the path
    separator (as Flink accepts), blanks dropped; empty or None means the system's
    temporary directory."""
    if not text:
        return (tempfile.gettempdir(),)
    parts = [p.strip() for chunk in text.split(",") for p in chunk.split(os.pathsep)]
    return tuple(p for p in parts if p) or (tempfile.gettempdir(),)


class SpillSpace:
    """A private directory per configured temporary directory, created on first use.

    Files are handed out round-robin over the directories (Flink spreads spill files over
    ``io.tmp.dirs`` the same way, so several disks share the load). Every file a job
    spills lives below one of these private directories, so :meth:`cleanup` removes them
    all whatever state the operators were left in; the runners call it when the job ends,
    fails or is cancelled. ``bytes_written`` counts every spilled byte of the job.
    """

    def __init__(self, tmp_dirs: Sequence[str] | None = None, tag: str = "job") -> None:
        self._roots = tuple(tmp_dirs) if tmp_dirs else parse_tmp_dirs(None)
        self._tag = tag
        self._dirs: list[str] = []
        self._next = itertools.count()
        self.bytes_written = 0
        self.files_written = 0

    def new_path(self, label: str) -> str:
        """A fresh file path for a spill file; ``label`` (an operator kind) goes into the
        name so a leftover file says who wrote it."""
        if not self._dirs:
            self._create_dirs()
        number = next(self._next)
        directory = self._dirs[number % len(self._dirs)]
        safe = "".join(c if c.isalnum() else "-" for c in label)[:40]
        return os.path.join(directory, f"{number:06d}-{safe}.arrow")

    def _create_dirs(self) -> None:
        name = f"flowsql-spill-{self._tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        for root in self._roots:
            path = os.path.join(root, name)
            try:
                os.makedirs(path, exist_ok=False)
            except OSError as exc:
                self.cleanup()
                raise ResourceExhausted(
                    f"cannot create a spill directory under '{root}' (io.tmp.dirs): "
                    f"{exc.strerror or exc}") from None
            self._dirs.append(path)

    @property
    def directories(self) -> tuple[str, ...]:
        """The private directories created so far (empty until the first spill)."""
        return tuple(self._dirs)

    def cleanup(self) -> None:
        """Remove every spill file and directory of this space (idempotent)."""
        for path in self._dirs:
            shutil.rmtree(path, ignore_errors=True)
        self._dirs = []
