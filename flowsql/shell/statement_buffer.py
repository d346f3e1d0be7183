"""When is typed SQL ready to run? The REPL's Enter key asks this after every line.

A statement is complete when its last significant token is a ``;`` that stands outside any
quoted string (``'...'``), quoted identifier (``"..."`` or ``` `...` ```) and comment
(``-- ...`` or ``/* ... */``). A ``;`` inside those does not end anything, and an unclosed
quote or block comment keeps the input open. Doubled quote characters are escapes, as in
standard SQL. This is a lexical check only: whether the text parses is the engine's question.
"""

from __future__ import annotations

import re

__all__ = ["is_blank", "statement_complete"]

_TOKEN = re.compile(
    r"""
      (?P<space>\s+)
    | (?P<comment>--[^\n]*|/\*.*?\*/)
    | (?P<open>/\*.*)                                      # block comment never closed
    | (?P<quoted>'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`)
    | (?P<unclosed>['"`].*)                                # quote never closed
    | (?P<semicolon>;)
    | (?P<word>[^\s;'"`/-]+|[/-])
    """,
    re.DOTALL | re.VERBOSE,
)


def _last_significant(text: str) -> str | None:
    """Kind of the last token that is neither space nor a closed comment; ``open`` when a
    quote or block comment is left unclosed; None for blank text."""
    last: str | None = None
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind in ("open", "unclosed"):
            return "open"
        if kind not in ("space", "comment"):
            last = kind
    return last


def statement_complete(text: str) -> bool:
    """True when ``text`` ends with a top-level ``;`` (trailing space and comments allowed)."""
    return _last_significant(text) == "semicolon"


def is_blank(text: str) -> bool:
    """True when ``text`` holds only whitespace and closed comments."""
    return _last_significant(text) is None
