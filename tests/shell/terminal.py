"""The real ``flowsql`` shell in a pseudo-terminal (a pane of a private tmux server),
driven by keystrokes and read back as a user sees it.

:class:`Terminal` starts ``python -m flowsql ARGS`` in a fixed-size pane, types text and
keys into it, and reads the visible screen (as text or as lines, trailing blanks dropped),
everything written so far (:meth:`Terminal.history`, scrolled-off lines included) or one
line's characters with their attributes (:meth:`Terminal.styled_line`). Tests wait for a
state (:meth:`Terminal.wait_until`, :meth:`Terminal.wait_for`) rather than sleeping a fixed
time, with generous limits, so they are fast on an idle machine and still pass on a loaded
one; nothing asserts on how long anything took.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TypeVar

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "flowsql>"
#: seconds a wait may take before the test fails
WAIT_S = 90.0
_SGR = re.compile(r"\x1b\[([\d;]*)m")
#: SGR attributes by code: what a test can ask of a character
ATTRIBUTES = {"1": "bold", "3": "italic", "4": "underline", "7": "reverse"}

_Screen = TypeVar("_Screen")


def require_tmux() -> None:
    if shutil.which("tmux") is None:
        pytest.fail("the terminal tests need tmux on PATH")


def _attributes_after(active: frozenset[str], parameters: str) -> frozenset[str]:
    """The attributes in force after one SGR sequence: ``0`` (or nothing) resets, colours
    (``38;5;N``, ``48;5;N``, ``38;2;R;G;B``, 30-49) become ``colour``, other codes are
    looked up in ATTRIBUTES."""
    codes = parameters.split(";") if parameters else ["0"]
    result = set(active)
    index = 0
    while index < len(codes):
        code = codes[index]
        if code in ("38", "48"):
            result.add("colour")
            index += 3 if codes[index + 1:index + 2] == ["5"] else 5
            continue
        if code in ("", "0"):
            result = set()
        elif code in ("39", "49"):
            result.discard("colour")
        elif code.isdigit() and 30 <= int(code) <= 47:
            result.add("colour")
        elif code in ("22", "23", "24", "27"):
            result.discard(ATTRIBUTES.get(code[1], ""))
        elif code in ATTRIBUTES:
            result.add(ATTRIBUTES[code])
        index += 1
    return frozenset(result)


class Terminal:
    """``flowsql ARGS`` running in a ``width`` x ``height`` terminal; ``close`` (or leaving
    a ``with`` block) ends it and its tmux server. ``env`` adds environment variables."""

    def __init__(self, *args: str, width: int = 110, height: int = 30,
                 env: dict[str, str] | None = None) -> None:
        require_tmux()
        self._dir = tempfile.mkdtemp(prefix="fsqterm")
        self._socket = os.path.join(self._dir, "tmux")
        environment = {**os.environ, "PYTHONPATH": str(ROOT), "FLOWSQL_HISTORY": "",
                       "TERM": "xterm-256color",
                       # no cursor-position requests: a reply arriving between two prompts
                       # would be echoed onto the screen
                       "PROMPT_TOOLKIT_NO_CPR": "1", **(env or {})}
        command = [sys.executable, "-m", "flowsql", *args]
        self._tmux("new-session", "-d", "-s", "shell", "-x", str(width), "-y", str(height),
                   "-c", str(ROOT), "--", *command, env=environment)
        self._tmux("set-option", "-t", "shell", "remain-on-exit", "on")

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def _tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(["tmux", "-S", self._socket, *args], capture_output=True,
                              text=True, env=env, check=True, timeout=30)
        return done.stdout

    # --- input ------------------------------------------------------------------------

    def type(self, text: str) -> None:
        """Type ``text`` literally (newlines as Enter)."""
        for number, line in enumerate(text.split("\n")):
            if number:
                self.key("Enter")
            if line:
                # tmux reads a ';' ending an argument as its command separator
                escaped = line[:-1] + "\\;" if line.endswith(";") else line
                self._tmux("send-keys", "-t", "shell", "-l", escaped)

    def key(self, *names: str) -> None:
        """Press keys by tmux name: Enter, Tab, C-c, C-d, C-l, q, Down, Left, ..."""
        self._tmux("send-keys", "-t", "shell", *names)

    def fresh_prompt(self) -> None:
        """Discard the input (Ctrl-C) and clear the screen (Ctrl-L): an empty prompt at the
        top of the screen."""
        self.key("C-c")
        self.key("C-l")
        self.wait_until(lambda lines: lines == [PROMPT], "an empty prompt", self.lines)

    # --- output -----------------------------------------------------------------------

    def screen(self) -> str:
        """The visible screen, trailing blanks of each line and trailing empty lines cut."""
        lines = self._tmux("capture-pane", "-p", "-t", "shell").split("\n")
        return "\n".join(line.rstrip() for line in lines).rstrip("\n")

    def lines(self) -> list[str]:
        """The visible screen as lines, trailing blanks and trailing empty lines cut."""
        screen = self.screen()
        return screen.split("\n") if screen else []

    def history(self) -> str:
        """Everything written so far, scrolled-off lines included."""
        lines = self._tmux("capture-pane", "-p", "-S", "-5000", "-t", "shell").split("\n")
        return "\n".join(line.rstrip() for line in lines).rstrip("\n")

    def styled_line(self, row: int) -> list[tuple[str, frozenset[str]]]:
        """Line ``row`` of the screen as ``(character, attributes)`` pairs (attributes:
        bold, italic, underline, reverse, colour)."""
        line = self._tmux("capture-pane", "-p", "-e", "-t", "shell").splitlines()[row]
        styled: list[tuple[str, frozenset[str]]] = []
        active: frozenset[str] = frozenset()
        position = 0
        for match in _SGR.finditer(line):
            styled.extend((char, active) for char in line[position:match.start()])
            active = _attributes_after(active, match.group(1))
            position = match.end()
        styled.extend((char, active) for char in line[position:])
        return styled

    # --- waiting ----------------------------------------------------------------------

    def wait_until(self, check: Callable[[_Screen], bool], what: str,
                   source: Callable[[], _Screen] | None = None) -> _Screen:
        """Poll the screen (or ``source``: ``lines``, ``history``, ...) until ``check``
        holds and return what it read; fail showing the last of it after ``WAIT_S``."""
        read: Callable[[], _Screen] = source or self.screen  # type: ignore[assignment]
        deadline = time.monotonic() + WAIT_S
        while True:
            seen = read()
            if check(seen):
                return seen
            if time.monotonic() > deadline:
                shown = "\n".join(seen) if isinstance(seen, list) else seen
                pytest.fail(f"timed out waiting for {what}; the screen:\n{shown}")
            time.sleep(0.05)

    def wait_for(self, text: str) -> str:
        """Wait until ``text`` was written (scrolled off or not); returns the history."""
        return self.wait_until(lambda written: text in written, repr(text), self.history)

    def exited(self) -> bool:
        out = self._tmux("list-panes", "-t", "shell", "-F", "#{pane_dead}")
        return out.strip() == "1"

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self._socket, "kill-server"], capture_output=True,
                       timeout=30)
        shutil.rmtree(self._dir, ignore_errors=True)
