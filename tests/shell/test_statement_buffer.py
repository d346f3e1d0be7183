"""When Enter submits: a top-level ';' ends a statement; quotes and comments hide it."""

from __future__ import annotations

import pytest

from flowsql.shell.statement_buffer import is_blank, statement_complete
from flowsql.sql.statement_parser import split_statements


@pytest.mark.parametrize("text", [
    "SELECT 1;",
    "SELECT 1;  \n",
    "SELECT\n  1\n;",
    "SELECT 1; -- trailing comment",
    "SELECT 1; /* closed */",
    "SELECT 'it''s';",
    "SELECT ';' AS semi;",
    'SELECT "a;b" FROM t;',
    "SELECT `a;b` FROM t;",
    "SELECT 1 - 2 / 3;",
    "SELECT 1; SELECT 2;",
])
def test_complete(text: str) -> None:
    assert statement_complete(text)
    assert not is_blank(text)


@pytest.mark.parametrize("text", [
    "SELECT 1",
    "SELECT ';'",
    "SELECT 'it''s;",
    "SELECT 'unclosed;\n",
    'SELECT "a;',
    "SELECT `a;",
    "SELECT 1 -- ;",
    "SELECT /* ; */ 1",
    "SELECT 1; /* still open ;",
    "SELECT 1; SELECT 2",
])
def test_incomplete(text: str) -> None:
    assert not statement_complete(text)


@pytest.mark.parametrize("text", ["", "   \n\t", "-- only a comment", "/* a */ -- b\n"])
def test_blank(text: str) -> None:
    assert is_blank(text)
    assert not statement_complete(text)


def test_unclosed_comment_is_neither_blank_nor_complete() -> None:
    assert not is_blank("/* open ;")
    assert not statement_complete("/* open ;")


@pytest.mark.parametrize(("text", "complete"), [
    # a nested block comment hides the ';' inside it, as in the parser
    ("SELECT 1 /* /* */ ;", False),
    ("SELECT 1; /* /* */ */", True),
    ("SELECT 1 /* /* */ */;", True),
    # a doubled quote inside a quoted identifier
    ('SELECT "a""b;" FROM t;', True),
    ('SELECT "a""b;" FROM t', False),
])
def test_nested_comments_and_escapes_end_statements_as_the_parser_does(
        text: str, complete: bool) -> None:
    assert statement_complete(text) is complete


@pytest.mark.parametrize(("script", "statements"), [
    ("SELECT ';' AS a; SELECT 2;", ["SELECT ';' AS a", "SELECT 2"]),
    ("SELECT `x;y` FROM t; SELECT 1;", ["SELECT `x;y` FROM t", "SELECT 1"]),
    ('SELECT "x;y" FROM t;', ['SELECT "x;y" FROM t']),
    ("SELECT 1 -- one; two\n; SELECT 2;", ["SELECT 1", "SELECT 2"]),
    ("SELECT 1 /* a; /* b; */ c; */ ; SELECT 2;", ["SELECT 1", "SELECT 2"]),
])
def test_the_shell_submits_what_the_parser_splits(script: str, statements: list[str]) -> None:
    """Typed one character at a time, the script is ready to submit exactly at the ';' that
    ends each statement the parser reads from it, and nowhere else."""
    spans = split_statements(script)
    assert [script[s:e] for s, e, _ in spans] == statements
    ready = [i + 1 for i in range(len(script))
             if script[i] == ";" and statement_complete(script[:i + 1])]
    assert len(ready) == len(spans)
    for (_, end, _), at in zip(spans, ready, strict=True):
        # between the statement's last token and the ';' only space and comments
        assert at > end and split_statements(script[end:at - 1]) == []
