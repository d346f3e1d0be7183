"""The real shell in a pseudo-terminal: ``python -m flowsql`` inside a private tmux server,
driven by keystrokes and read back as the visible screen.

Waits poll the screen until the expected text shows, with generous limits (a loaded machine
is slow); nothing asserts on how long anything took.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 90.0


def require_tmux() -> None:
    if shutil.which("tmux") is None:
        pytest.fail("the terminal tests need tmux on PATH")


class Terminal:
    """One shell session; ``close`` ends it and its tmux server."""

    def __init__(self, *args: str, width: int = 110, height: int = 30,
                 env: dict[str, str] | None = None) -> None:
        require_tmux()
        self._dir = tempfile.mkdtemp(prefix="fsqterm")
        self._socket = os.path.join(self._dir, "tmux")
        environment = {**os.environ, "PYTHONPATH": str(ROOT), "FLOWSQL_HISTORY": "",
                       "TERM": "xterm-256color", **(env or {})}
        command = [sys.executable, "-m", "flowsql", *args]
        self._tmux("new-session", "-d", "-s", "shell", "-x", str(width), "-y", str(height),
                   "--", *command, env=environment)
        self._tmux("set-option", "-t", "shell", "remain-on-exit", "on")

    def _tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(["tmux", "-S", self._socket, *args], capture_output=True,
                              text=True, env=env, check=True)
        return done.stdout

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
        """Press keys by tmux name: Enter, C-c, C-d, q, Down, ..."""
        self._tmux("send-keys", "-t", "shell", *names)

    def screen(self) -> str:
        """The visible screen, trailing blanks of each line and trailing empty lines cut."""
        lines = self._tmux("capture-pane", "-p", "-t", "shell").split("\n")
        return "\n".join(line.rstrip() for line in lines).rstrip("\n")

    def history(self) -> str:
        """Everything written so far, scrolled-off lines included."""
        lines = self._tmux("capture-pane", "-p", "-S", "-5000", "-t", "shell").split("\n")
        return "\n".join(line.rstrip() for line in lines).rstrip("\n")

    def wait_until(self, check: Callable[[str], bool], what: str,
                   source: Callable[[], str] | None = None) -> str:
        """Poll the screen (or ``source``) until ``check`` holds; fail showing the screen."""
        read = source or self.screen
        deadline = time.monotonic() + WAIT_S
        while True:
            text = read()
            if check(text):
                return text
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting for {what}; the screen:\n{text}")
            time.sleep(0.1)

    def wait_for(self, text: str) -> str:
        """Wait until ``text`` was written (scrolled off or not); returns the history."""
        return self.wait_until(lambda written: text in written, repr(text), self.history)

    def exited(self) -> bool:
        out = self._tmux("list-panes", "-t", "shell", "-F", "#{pane_dead}")
        return out.strip() == "1"

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self._socket, "kill-server"], capture_output=True)
        shutil.rmtree(self._dir, ignore_errors=True)
