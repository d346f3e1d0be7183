"""What the REPL does with the text a user submits, kept free of terminal I/O.

The prompt-toolkit front end (``repl.py``) only collects text and asks two questions:
:meth:`Interpreter.ready` (should Enter submit the buffer or start a new line?) and
:meth:`Interpreter.handle` (run it; keep going?). Everything observable — results, timing
lines, error messages, meta-commands — happens here and is written to plain text streams,
which is what makes the REPL testable without a terminal.

Contract of :meth:`Interpreter.handle`: a :class:`~flowsql.errors.FlowSQLError` or an
unexpected exception is reported as one message and never ends the REPL; statements after a
failing one in the same submission are not run. ``KeyboardInterrupt`` is left to the caller,
which decides what cancelling means at that moment.
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import TYPE_CHECKING, TextIO

import pyarrow as pa

from flowsql.errors import FlowSQLError
from flowsql.render import (
    render_change_rows,
    render_changelog,
    render_result,
    render_table,
    row_count_footer,
)
from flowsql.shell.help import HELP_TEXT
from flowsql.shell.open_statement_set import inside_statement_set
from flowsql.shell.pager import needs_paging
from flowsql.shell.result_views import result_mode
from flowsql.shell.statement_buffer import is_blank, statement_complete
from flowsql.sql.flink_statements import client_command

if TYPE_CHECKING:
    from flowsql.session import Result, Session

__all__ = ["HELP_TEXT", "Interpreter"]


class Interpreter:
    """Runs submitted text against one session and reports to ``out`` and ``err``.

    ``out``/``err`` default to the current ``sys.stdout``/``sys.stderr`` at write time, so
    redirection done after construction is honoured.
    """

    def __init__(self, session: Session, out: TextIO | None = None, err: TextIO | None = None,
                 max_rows: int | None = 40) -> None:
        self.session = session
        self._out = out
        self._err = err
        self.max_rows = max_rows

    @staticmethod
    def is_meta_command(text: str) -> bool:
        """HELP, QUIT and EXIT (the grammar's client commands) and the backslash commands."""
        return text.strip().startswith("\\") or client_command(text) is not None

    def ready(self, text: str) -> bool:
        """Should Enter submit ``text``? Yes for a meta-command, for blank input (to get a
        fresh prompt) and for a complete statement; otherwise Enter continues the input."""
        return is_blank(text) or self.is_meta_command(text) or (
            statement_complete(text) and not inside_statement_set(text))

    def handle(self, text: str) -> bool:
        """Run ``text`` (statements or one meta-command); False means the user asked to quit."""
        if is_blank(text):
            return True
        if self.is_meta_command(text):
            return self._meta(text.strip().rstrip(";").strip())
        self._run(text)
        return True

    # --- statements -------------------------------------------------------------------

    def _run(self, text: str) -> None:
        results = self.session.run_script(text)
        while True:
            started = time.perf_counter()
            try:
                with self._progress_line():
                    result = next(results, None)
            except FlowSQLError as error:
                self.report_error(f"Error: {error}")
                return
            except Exception as error:  # the REPL must survive engine bugs
                self.report_error(f"Internal error: {type(error).__name__}: {error}")
                return
            if result is None:
                return
            if result.table is None and result.changelog is not None:
                self._stream_changes(result)
                continue
            self._show(self._report(result, time.perf_counter() - started))

    def _progress_line(self) -> contextlib.AbstractContextManager[object]:
        """The progress line of a long batch query, drawn on a terminal only."""
        if not (self.interactive() and self.session.track_progress):
            return contextlib.nullcontext()
        from flowsql.shell.progress_line import ProgressLine

        return ProgressLine(self.session.progress, self._out or sys.stdout)

    def _stream_changes(self, result: Result) -> None:
        """A streaming query: its changes as they happen, until it ends or Ctrl-C; in the
        ``table`` result mode, the full-screen view of its current result."""
        mode = result_mode(dict(self.session.settings))
        if mode == "table":
            if self.interactive():
                self._table_view(result)
                return
            self.write("(the table result mode needs a terminal: showing the changes)")
        changes = result.stream()
        first, count = True, 0
        try:
            for batch in changes:
                if mode == "changelog":
                    text = render_change_rows(batch)
                else:
                    text = render_changelog(pa.Table.from_batches([batch]), header=first)
                first, count = False, count + batch.num_rows
                if text:
                    self.write(text)
        except KeyboardInterrupt:
            self.write("(stopped)")
        except FlowSQLError as error:
            self.report_error(f"Error: {error}")
        finally:
            changes.close()  # type: ignore[attr-defined]
        self.write(f"({count} changes)")

    def _table_view(self, result: Result) -> None:
        from flowsql.shell.table_view import run_table_view

        outcome = run_table_view(result.changelog, result.changelog.schema)
        if outcome.error is not None:
            self.report_error(f"Error: {outcome.error}")
        self.write(outcome.summary())

    def interactive(self) -> bool:
        """Whether results go to a terminal (then long ones are paged, and the table
        result mode can open its view)."""
        out = self._out or sys.stdout
        return bool(getattr(out, "isatty", lambda: False)())

    def _show(self, text: str) -> None:
        """Write a result; one longer than the terminal goes through the pager first, and
        then only its last line (the row count) stays on the screen."""
        if self.interactive() and needs_paging(text.rstrip("\n")):
            from flowsql.shell.pager import page

            body = text.rstrip("\n")
            page(body)
            self.write(body.rsplit("\n", 1)[-1] + "\n")
            return
        self.write(text)

    def _report(self, result: Result, seconds: float) -> str:
        if result.kind == "explain" or result.table is None:
            return f"{render_result(result, self.max_rows)}\n({seconds:.2f} s)\n"
        table = result.table
        shown = table.num_rows if self.max_rows is None else min(table.num_rows, self.max_rows)
        body = render_table(table, self.max_rows, footer=False)
        # a message beside the table says in full what a cell may cut (a savepoint's path)
        note = f"{result.message}\n" if result.message else ""
        return f"{body}\n{row_count_footer(table.num_rows, shown, seconds)}\n{note}"

    # --- meta-commands ----------------------------------------------------------------

    def _meta(self, command: str) -> bool:
        name, _, argument = command.partition(" ")
        argument = argument.strip()
        asked = client_command(command)
        if asked == "quit":
            return False
        if asked == "help":
            self.write(HELP_TEXT + "\n")
        elif name == "\\d":
            self._run(f"DESCRIBE {argument}" if argument else "SHOW TABLES")
        else:
            self.report_error(f"Unknown command {name}; type \\? for help")
        return True

    # --- output -----------------------------------------------------------------------

    def write(self, text: str) -> None:
        """Write ``text`` and a newline to the output stream."""
        out = self._out or sys.stdout
        out.write(text + "\n")
        out.flush()

    def report_error(self, text: str) -> None:
        """Write ``text`` and a blank line to the error stream."""
        err = self._err or sys.stderr
        err.write(text + "\n\n")
        err.flush()
