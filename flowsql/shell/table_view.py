"""The ``table`` result mode: a full-screen view of a streaming query's current result.

The query runs in a background thread that applies its changes to a
:class:`~flowsql.shell.result_views.MaterializedResult`; the view redraws every
``refresh_s`` seconds from it, so rows update in place. The last line is the status: row
count, changes applied, refresh rate, the result's watermark when the query has one, and
whether the query is still running. Up/Down, PageUp/PageDown, Home/End scroll. ``q`` or
Ctrl-C leaves the view and cancels the query (Flink's table mode does the same).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from prompt_toolkit.application import Application
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl

from flowsql.errors import FlowSQLError
from flowsql.render import render_table
from flowsql.shell.result_views import MaterializedResult
from flowsql.shell.scrolling import scrolling_keys

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

__all__ = ["TableViewOutcome", "run_table_view"]

END_OF_INPUT = 2**63 - 1  # the watermark an ended input passes on


@dataclass(frozen=True)
class TableViewOutcome:
    """What the view ended with: the rows shown last, the changes applied, whether the
    query was still running when the user left (and so was cancelled), and its error."""

    table: pa.Table
    changes: int
    cancelled: bool
    error: FlowSQLError | None

    def summary(self) -> str:
        rows = self.table.num_rows
        text = f"({rows} row{'s' if rows != 1 else ''}, {self.changes} changes"
        return text + ("; query cancelled)" if self.cancelled else ")")


class _Query:
    """The query's thread: iterates the changelog into ``result``."""

    def __init__(self, changelog: Any, result: MaterializedResult) -> None:
        self.changelog = changelog
        self.result = result
        self.error: FlowSQLError | None = None
        self.done = threading.Event()
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self._main, name="flowsql-table-view",
                                        daemon=True)
        self._thread.start()

    def _main(self) -> None:
        try:
            for batch in self.changelog:
                if self.stopping.is_set():
                    break
                self.result.apply(batch)
        except FlowSQLError as error:
            self.error = error
        except Exception as error:  # the shell must survive an engine bug
            self.error = FlowSQLError(f"{type(error).__name__}: {error}")
        finally:
            self.done.set()

    def watermark(self) -> int | None:
        """The result's watermark (the root operator's), None when unknown."""
        run = getattr(self.changelog, "run", None)
        try:
            metrics = run.metrics() if run is not None else []
        except Exception:  # a run that cannot report now: no watermark shown
            return None
        return metrics[0].get("watermark") if metrics else None

    def cancel(self) -> None:
        """Cancel the run and wait for the thread (the run may only be starting: it is
        looked for again until the thread ends)."""
        self.stopping.set()
        deadline = time.monotonic() + 30
        while self._thread.is_alive() and time.monotonic() < deadline:
            run = getattr(self.changelog, "run", None)
            if run is not None:
                run.cancel()
            self._thread.join(0.1)


def run_table_view(changelog: Any, schema: pa.Schema, *, refresh_s: float = 0.5,
                   input: Input | None = None, output: Output | None = None
                   ) -> TableViewOutcome:
    """Show ``changelog`` (an iterable of batches whose first column is ``op``, with a
    ``run`` that can be cancelled once iteration started) until the user leaves."""
    result = MaterializedResult(schema)
    query = _Query(changelog, result)
    offset = [0]

    def body_height() -> int:
        return max(1, app.output.get_size().rows - 1)

    def body() -> str:
        lines = render_table(result.table(), None, footer=False).split("\n")
        header, rows = lines[:2], lines[2:]
        room = max(1, body_height() - 2)
        offset[0] = max(0, min(offset[0], len(rows) - room))
        return "\n".join([*header, *rows[offset[0]:offset[0] + room]])

    def status() -> str:
        state = "running"
        if query.done.is_set():
            state = "failed" if query.error is not None else "finished"
        parts = [f"{result.row_count} rows", f"{result.changes} changes",
                 f"refresh {refresh_s:g} s"]
        watermark = query.watermark()
        if watermark == END_OF_INPUT:
            parts.append("watermark: end of input")
        elif watermark is not None:
            instant = datetime.fromtimestamp(watermark / 1000, UTC)
            parts.append(f"watermark {instant:%Y-%m-%d %H:%M:%S}.{watermark % 1000:03d}")
        parts += [state, "q: quit"]
        return " " + " | ".join(parts)

    bindings = scrolling_keys(offset, lambda: body_height() - 2)

    layout = Layout(HSplit([
        Window(FormattedTextControl(body), wrap_lines=False),
        Window(FormattedTextControl(status), height=1, style="reverse"),
    ]))
    app: Application[None] = Application(layout=layout, key_bindings=bindings,
                                         full_screen=True, refresh_interval=refresh_s,
                                         input=input, output=output)
    app.run()
    cancelled = not query.done.is_set()
    if cancelled:
        query.cancel()
    return TableViewOutcome(result.table(), result.changes, cancelled, query.error)
