"""What the user sees while the Spark JVM starts: one progress line (on a terminal), never
Spark's own output.

The JVM inherits the process's standard error when PySpark launches it, and writes its
start-up notices and log lines there. :func:`quiet_start` points file descriptor 2 at a log
file for the duration of the launch, so the JVM (and the Python workers it forks later)
keep writing to that file, then restores it: flowsql's own messages and results stay on the
terminal, Spark's go to the log. The log is ``$FLOWSQL_SPARK_LOG`` when set, else
``flowsql-spark-<user id>.log`` in the temporary directory; it is appended to.

On a terminal a ticker on the original standard error shows ``Starting Spark... 3 s`` and
ends with ``Spark started in 4.2 s (log: <path>)``; piped output gets no progress line.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["quiet_start", "spark_log_path"]

TICK_S = 0.5


def spark_log_path() -> Path:
    configured = os.environ.get("FLOWSQL_SPARK_LOG")
    if configured:
        return Path(configured).expanduser()
    return Path(tempfile.gettempdir()) / f"flowsql-spark-{os.getuid()}.log"


@contextmanager
def quiet_start() -> Iterator[Path]:
    """Run the block (the JVM's launch) with fd 2 on the Spark log; yields the log's path."""
    path = spark_log_path()
    sys.stderr.flush()
    saved = os.dup(2)
    progress = _Progress(saved) if os.isatty(saved) else None
    started = time.monotonic()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:
        os.close(saved)  # no writable log: Spark's output is left where it was
        yield path
        return
    try:
        os.dup2(log, 2)
        if progress is not None:
            progress.start()
        yield path
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(log)
        if progress is not None:
            progress.stop(f"Spark started in {time.monotonic() - started:.1f} s "
                          f"(log: {path})")
        os.close(saved)


class _Progress:
    """``Starting Spark... N s`` rewritten in place on ``fd`` until stopped."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._done = threading.Event()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._main, name="flowsql-spark-start",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _main(self) -> None:
        while not self._done.wait(TICK_S):
            self._show(f"Starting Spark... {time.monotonic() - self._started:.0f} s")

    def _show(self, text: str) -> None:
        os.write(self._fd, f"\r\x1b[K{text}".encode())

    def stop(self, final: str) -> None:
        self._done.set()
        self._thread.join()
        self._show(final + "\n")
