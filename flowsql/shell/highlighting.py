"""How the line being typed looks: SQL syntax colours and the matching bracket.

The colours come from pygments' SQL lexer through prompt-toolkit's ``PygmentsLexer``
(keywords, strings, numbers, comments and operators each get a style class); the bracket
under or just before the cursor and its partner are shown reversed, so an unbalanced
``(`` in a long multi-line statement is found at a glance. Only the display changes: the
text submitted is what was typed.
"""

from __future__ import annotations

from prompt_toolkit.layout.processors import HighlightMatchingBracketProcessor, Processor
from prompt_toolkit.lexers import Lexer, PygmentsLexer
from prompt_toolkit.styles import Style
from pygments.lexers.sql import SqlLexer

__all__ = ["BRACKETS", "input_processors", "sql_lexer", "style"]

BRACKETS = "()[]{}"


def sql_lexer() -> Lexer:
    """The lexer colouring SQL as it is typed."""
    return PygmentsLexer(SqlLexer)


def input_processors() -> list[Processor]:
    """Display processors of the input line: the matching bracket highlighted."""
    return [HighlightMatchingBracketProcessor(chars=BRACKETS)]


def style() -> Style:
    """The bracket pair in reverse video, visible whatever the terminal's palette (the
    token colours are prompt-toolkit's default pygments style, which the prompt adds)."""
    return Style.from_dict({
        "matching-bracket.cursor": "reverse bold",
        "matching-bracket.other": "reverse bold",
    })
