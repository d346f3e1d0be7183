"""The real ``flowsql`` shell in a pseudo-terminal (a tmux pane), read as a user sees it.

:class:`TerminalShell` starts the command in a detached tmux session of its own (a private
server socket, a fixed size), types keys into it and returns the visible screen as lines
(trailing spaces dropped). Tests wait for a screen state with :meth:`wait_for` rather than
sleeping a fixed time, so they are fast on an idle machine and still pass on a loaded one.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "flowsql>"


class TerminalShell:
    """``flowsql ARGS`` running in a ``width`` x ``height`` terminal."""

    def __init__(self, args: Sequence[str], workdir: Path, width: int = 100,
                 height: int = 40) -> None:
        self.socket = workdir / "tmux.sock"
        command = " ".join(shlex.quote(part) for part in (
            # no cursor-position requests: a reply arriving between two prompts would be
            # echoed onto the screen
            "env", f"PYTHONPATH={ROOT}", "FLOWSQL_HISTORY=", "TERM=xterm-256color",
            "PROMPT_TOOLKIT_NO_CPR=1",
            sys.executable, "-c", "from flowsql.cli import main; raise SystemExit(main())",
            *args))
        self._tmux("new-session", "-d", "-x", str(width), "-y", str(height),
                   "-c", str(ROOT), command)

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", str(self.socket), *args], check=True,
                              capture_output=True, text=True, timeout=30).stdout

    def type(self, text: str) -> None:
        """Type ``text`` literally (no key names)."""
        if text.endswith(";"):  # tmux reads a trailing ';' as its command separator
            text = text[:-1] + "\\;"
        self._tmux("send-keys", "-l", text)

    def press(self, *keys: str) -> None:
        """Press keys by tmux name: ``Tab``, ``Enter``, ``C-c``, ``Left``..."""
        self._tmux("send-keys", *keys)

    def screen(self) -> list[str]:
        """The visible lines, trailing spaces dropped, trailing empty lines removed."""
        lines = [line.rstrip() for line in self._tmux("capture-pane", "-p").splitlines()]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def wait_for(self, condition: Callable[[list[str]], bool],
                 timeout: float = 60.0) -> list[str]:
        """The screen once ``condition(screen)`` holds; AssertionError with the last screen
        when it does not within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.screen()
            if condition(lines):
                return lines
            if time.monotonic() > deadline:
                raise AssertionError("the terminal never showed what was expected:\n"
                                     + "\n".join(lines))
            time.sleep(0.05)

    def fresh_prompt(self) -> None:
        """Discard the input (Ctrl-C) and clear the screen (Ctrl-L): an empty prompt at the
        top of the screen."""
        self.press("C-c")
        self.press("C-l")
        self.wait_for(lambda lines: lines == [PROMPT])

    def close(self) -> None:
        subprocess.run(["tmux", "-S", str(self.socket), "kill-server"], capture_output=True,
                       timeout=30)
