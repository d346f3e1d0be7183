"""help, HELP; and \\? all print the same list of commands and statements at once."""

from __future__ import annotations

import io

import pytest

import flowsql
from flowsql.shell.help import HELP_TEXT
from flowsql.shell.interpreter import Interpreter


@pytest.mark.parametrize("text", ["help", "HELP;", "\\?", "  Help ;  ", "\\h"])
def test_every_spelling_is_ready_on_enter_and_prints_the_help(text: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    with flowsql.connect() as session:
        interpreter = Interpreter(session, out=out, err=err)
        assert interpreter.ready(text)  # Enter runs it: no continuation prompt
        assert interpreter.handle(text) is True
    assert (out.getvalue(), err.getvalue()) == (HELP_TEXT + "\n\n", "")


def test_help_lists_statements_and_commands() -> None:
    lines = HELP_TEXT.splitlines()
    assert lines[5] == "Statements:"
    statements = lines[6:lines.index("Commands:")]
    assert [line.split()[0] for line in statements] == [
        "SELECT", "INSERT", "CREATE", "CREATE", "CREATE", "DROP", "SHOW", "DESCRIBE",
        "EXPLAIN", "ANALYZE", "SET;", "EXECUTE", "SHOW", "STOP"]
    commands = lines[lines.index("Commands:") + 1:-1]
    assert [line.split()[0] for line in commands] == ["\\?", "\\q", "\\d", "\\d"]


def test_a_statement_starting_with_help_is_not_help() -> None:
    with flowsql.connect() as session:
        interpreter = Interpreter(session, out=io.StringIO(), err=io.StringIO())
        assert not interpreter.ready("help me")
