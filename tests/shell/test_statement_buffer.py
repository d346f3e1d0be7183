"""When Enter submits: a top-level ';' ends a statement; quotes and comments hide it."""

from __future__ import annotations

import pytest

from flowsql.shell.statement_buffer import is_blank, statement_complete


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
