"""The real ``flowsql`` shell in a pseudo-terminal (a tmux pane), read as a user sees it.

:class:`TerminalShell` starts the command in a detached tmux session of its own (a private
server socket, a fixed size), types keys into it and returns the visible screen as lines
(trailing spaces dropped). Tests wait for a screen state with :meth:`wait_for` rather than
sleeping a fixed time, so they are fast on an idle machine and still pass on a loaded one.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "flowsql>"
_SGR = re.compile(r"\x1b\[([\d;]*)m")
#: SGR attributes by code: what a test can ask of a character
ATTRIBUTES = {"1": "bold", "3": "italic", "4": "underline", "7": "reverse"}


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

    def styled_line(self, row: int) -> list[tuple[str, frozenset[str]]]:
        """Line ``row`` of the screen as ``(character, attributes)`` pairs (attributes:
        bold, italic, underline, reverse, colour)."""
        line = self._tmux("capture-pane", "-p", "-e").splitlines()[row]
        styled: list[tuple[str, frozenset[str]]] = []
        active: frozenset[str] = frozenset()
        position = 0
        for match in _SGR.finditer(line):
            styled.extend((char, active) for char in line[position:match.start()])
            active = _attributes_after(active, match.group(1))
            position = match.end()
        styled.extend((char, active) for char in line[position:])
        return styled

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
