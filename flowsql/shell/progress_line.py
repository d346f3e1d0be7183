"""The progress line of a long batch query: one line, redrawn in place while the query
runs, erased before its result is printed.

    [operators 3/7 · rows read 1.2M of ~6.0M (20%) · 2.4 s]  Ctrl-C cancels

:func:`progress_text` formats one moment (:class:`~flowsql.planner.query_progress.QueryProgress`
and the seconds since the statement started); :class:`ProgressLine` draws it from a thread
while the statement runs in the shell's thread. The line appears only after ``DELAY_S``
(a quick query never flickers), only on a terminal (the interpreter decides), and is cut to
the terminal's width, because a wrapped line could not be erased by returning the cursor to
its start. The figures come from ``Session.progress()``: the local runtime's operators
finished and rows its scans emitted against the optimizer's estimate, or Spark's stages.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from flowsql.planner.query_progress import QueryProgress

__all__ = ["DELAY_S", "ProgressLine", "progress_text", "short_count"]

#: seconds a statement runs before its progress line appears
DELAY_S = 0.5
#: seconds between two redraws
REDRAW_S = 0.2
#: return to the line's start and clear it
ERASE = "\r\x1b[K"
HINT = "  Ctrl-C cancels"


def short_count(rows: float) -> str:
    """A row count in at most five characters: 950, 12.3K, 1.2M, 3.0G."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if rows >= limit:
            return f"{rows / limit:.1f}{suffix}"
    return f"{int(rows)}"


def progress_text(progress: QueryProgress, seconds: float) -> str:
    """The line for one moment of a run ``seconds`` after it started. A percentage is
    shown while the rows read are below the estimate; past it (the estimate was low) only
    the two counts are. Spark's stages are left out until it has planned one (a query
    Spark answers without a job has none)."""
    parts = []
    if progress.stages:
        parts.append(f"stages {progress.stages_done or 0}/{progress.stages}")
    if progress.operators is not None:
        parts.append(f"operators {progress.operators_done or 0}/{progress.operators}")
    if progress.rows_read is not None:
        rows = f"rows read {short_count(progress.rows_read)}"
        estimate = progress.rows_estimated
        if estimate is not None and estimate >= 1:
            rows += f" of ~{short_count(estimate)}"
            if progress.rows_read <= estimate:
                rows += f" ({int(100 * progress.rows_read / estimate)}%)"
        parts.append(rows)
    parts.append(f"{seconds:.1f} s")
    return f"[{' · '.join(parts)}]{HINT}"


class ProgressLine:
    """While the ``with`` block runs: after ``delay`` seconds, ``progress()`` is drawn on
    ``out`` every ``REDRAW_S`` seconds (nothing while it returns None); on leaving the
    block (the result is ready, an error, Ctrl-C) the line is erased before anything else
    is written."""

    def __init__(self, progress: Callable[[], QueryProgress | None], out: TextIO,
                 delay: float = DELAY_S) -> None:
        self._progress = progress
        self._out = out
        self._delay = delay
        self._stop = threading.Event()
        self._drawn = False
        self._started = 0.0
        self._thread = threading.Thread(target=self._draw_until_stopped, daemon=True,
                                        name="progress-line")

    def __enter__(self) -> ProgressLine:
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        if self._drawn:
            self._write(ERASE)

    def _draw_until_stopped(self) -> None:
        if self._stop.wait(self._delay):
            return
        while not self._stop.is_set():
            try:
                progress = self._progress()
            except Exception:  # a moment's figures may fail to read; never the query
                progress = None
            if progress is not None:
                line = progress_text(progress, time.perf_counter() - self._started)
                width = shutil.get_terminal_size().columns - 1
                self._write(ERASE + line[:width])
                self._drawn = True
            self._stop.wait(REDRAW_S)

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()
