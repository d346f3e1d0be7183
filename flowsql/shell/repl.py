"""The interactive shell: a prompt-toolkit front end over :class:`Interpreter`.

This file owns only terminal concerns: the prompt and continuation prompt, multi-line
editing (Enter submits when :meth:`Interpreter.ready` says so, otherwise starts a new line),
the history file, and what Ctrl-C / Ctrl-D mean. Tab completion (``completion``) and
syntax and bracket highlighting (``highlighting``) are plugged in here. Ctrl-C while typing discards the input (and
never touches background jobs); Ctrl-C while a statement runs cancels it; Ctrl-D on an empty
line quits, asking first when jobs are running. Output of background jobs is written above
the prompt (prompt-toolkit's ``patch_stdout``), leaving the line being typed intact.

The history file is ``~/.flowsql_history``; the environment variable ``FLOWSQL_HISTORY``
names another file, and setting it to the empty string keeps history in memory only.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.patch_stdout import patch_stdout

import flowsql
from flowsql.shell.completion import SqlCompleter
from flowsql.shell.highlighting import input_processors, sql_lexer, style
from flowsql.shell.interpreter import Interpreter
from flowsql.shell.jobs import confirm_quit

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

    from flowsql.session import Session

__all__ = ["PROMPT", "history_path", "run_repl"]

PROMPT = "flowsql> "
CONTINUATION = "-> "


def history_path() -> Path | None:
    """Where history is kept; None for in-memory only (``FLOWSQL_HISTORY=""``)."""
    configured = os.environ.get("FLOWSQL_HISTORY")
    if configured is None:
        return Path.home() / ".flowsql_history"
    return Path(configured).expanduser() if configured else None


def _history() -> History:
    path = history_path()
    if path is None:
        return InMemoryHistory()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError:
        # An unwritable home directory must not keep the shell from starting.
        return InMemoryHistory()
    return FileHistory(str(path))


def _key_bindings(interpreter: Interpreter) -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if interpreter.ready(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    return bindings


def _continuation(width: int, line_number: int, wrap_count: int) -> str:
    return CONTINUATION.rjust(width)


def run_repl(session: Session, *, input: Input | None = None, output: Output | None = None,
             out: TextIO | None = None, err: TextIO | None = None,
             max_rows: int | None = 40) -> int:
    """Read, run and print until the user quits; returns the exit status (0).

    ``input``/``output`` are prompt-toolkit's terminal ends (tests pass a pipe input and a
    dummy output); ``out``/``err`` receive results and errors (default: stdout/stderr).
    """
    interpreter = Interpreter(session, out=out, err=err, max_rows=max_rows)
    # long batch queries show a progress line on a terminal (never in piped output)
    session.track_progress = interpreter.interactive()
    prompt: PromptSession[str] = PromptSession(
        PROMPT, multiline=True, prompt_continuation=_continuation, history=_history(),
        key_bindings=_key_bindings(interpreter), input=input, output=output,
        completer=SqlCompleter(session), complete_while_typing=False, lexer=sql_lexer(),
        input_processors=input_processors(), style=style())
    interpreter.write(f"flowsql {flowsql.__version__}: type \\? for help, \\q to quit\n")
    # what background jobs print (print sinks) goes above the prompt, not into the input
    with patch_stdout(raw=True):
        while True:
            try:
                text = prompt.prompt()
            except KeyboardInterrupt:
                continue  # discards the input; background jobs keep running
            except EOFError:
                if confirm_quit(session, input=input, output=output):
                    return 0
                continue
            try:
                if not interpreter.handle(text) and confirm_quit(session, input=input,
                                                                 output=output):
                    return 0
            except KeyboardInterrupt:
                interpreter.report_error("Cancelled.")
