"""When is typed SQL ready to run? The REPL's Enter key asks this after every line.

A statement is complete when its last token is a ``;``. The tokens are the parser's own
(:func:`flowsql.sql.statement_parser.script_tokens`, which ``split_statements`` splits at
``;``), so the shell and the parser agree on every ``;``: one inside a quoted string
(``'...'``), a quoted identifier (``"..."`` or ``` `...` ```) or a comment (``-- ...``,
``/* ... */``, nested block comments included) ends nothing, and an unclosed quote or block
comment keeps the input open. This is a lexical check only: whether the text parses is the
engine's question.
"""

from __future__ import annotations

from typing import Literal

from sqlglot.tokens import TokenType

from flowsql.errors import SqlSyntaxError
from flowsql.sql.statement_parser import script_tokens

__all__ = ["is_blank", "statement_complete"]

_Ending = Literal["blank", "open", "semicolon", "other"]


def _ending(text: str) -> _Ending:
    """How ``text`` ends: ``blank`` (no token: only space and comments), ``open`` (a quote
    or block comment is left unclosed -- the only text the tokenizer cannot read),
    ``semicolon`` or ``other``."""
    try:
        tokens = script_tokens(text)
    except SqlSyntaxError:
        return "open"
    if not tokens:
        return "blank"
    return "semicolon" if tokens[-1].token_type == TokenType.SEMICOLON else "other"


def statement_complete(text: str) -> bool:
    """True when ``text`` ends with a top-level ``;`` (trailing space and comments allowed)."""
    return _ending(text) == "semicolon"


def is_blank(text: str) -> bool:
    """True when ``text`` holds only whitespace and closed comments."""
    return _ending(text) == "blank"
