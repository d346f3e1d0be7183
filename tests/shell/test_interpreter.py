"""The REPL's behaviour without a terminal: what runs, what is printed, when it quits."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import pytest

import flowsql
from flowsql.session import Result
from flowsql.session.session import DEFAULT_SETTINGS
from flowsql.shell.interpreter import HELP_TEXT, Interpreter


def make(session: object | None = None) -> tuple[Interpreter, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Interpreter(session or flowsql.connect(), out=out, err=err), out, err  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "ready"), [
    ("SELECT 1", False),
    ("SELECT 1;", True),
    ("", True),
    ("\\q", True),
    ("\\d lineitem", True),
    ("quit", True),
    ("EXIT;", True),
    ("SELECT 'quit'", False),
])
def test_ready(text: str, ready: bool) -> None:
    assert make()[0].ready(text) is ready


@pytest.mark.parametrize("text", ["\\q", "quit", "exit", "Exit;", "  \\q  "])
def test_quit_words_end_the_loop(text: str) -> None:
    assert make()[0].handle(text) is False


def test_help_lists_meta_commands() -> None:
    interpreter, out, _ = make()
    assert interpreter.handle("\\?") is True
    assert out.getvalue() == HELP_TEXT + "\n\n"
    for command in ("\\?", "\\q", "\\d"):
        assert command in HELP_TEXT


def test_statements_print_results_with_a_timing_line() -> None:
    interpreter, out, err = make()
    assert interpreter.handle("SET 'table.exec.mini-batch.enabled' = 'true';\nSET;") is True
    assert err.getvalue() == ""
    text = out.getvalue()
    others = len(DEFAULT_SETTINGS)
    assert re.fullmatch(
        r"table\.exec\.mini-batch\.enabled = true\n\(\d+\.\d\d s\)\n\n"
        r"key +\| value\n-+\+-+\n"
        rf"(.+\n){{{others}}}table\.exec\.mini-batch\.enabled +\| true\n"
        rf"{others + 1} rows in \d+\.\d\d s\n\n", text), text


def test_error_is_reported_without_traceback_and_later_statements_do_not_run() -> None:
    interpreter, out, err = make()
    assert interpreter.handle("SET 'table.exec.mini-batch.enabled' = 'true'; DESCRIBE nope; "
                              "SET 'spark.broadcast-rows' = '5';") is True
    assert err.getvalue().startswith("Error: ")
    assert "Traceback" not in err.getvalue()
    assert "table.exec.mini-batch.enabled = true" in out.getvalue()
    assert "spark.broadcast-rows = 5" not in out.getvalue()
    assert "spark.broadcast-rows" not in interpreter.session.settings


def test_unknown_meta_command_and_missing_table_keep_the_repl_going() -> None:
    interpreter, _, err = make()
    assert interpreter.handle("\\x") is True
    assert interpreter.handle("\\d nope") is True
    assert err.getvalue().splitlines()[0] == "Unknown command \\x; type \\? for help"
    assert "Error: " in err.getvalue() and "nope" in err.getvalue()


class _BrokenSession:
    def run_script(self, text: str) -> Iterator[Result]:
        raise RuntimeError("boom")
        yield  # pragma: no cover - makes this a generator


def test_internal_errors_are_one_line_and_survivable() -> None:
    interpreter, _, err = make(_BrokenSession())
    assert interpreter.handle("SELECT 1;") is True
    assert err.getvalue() == "Internal error: RuntimeError: boom\n\n"


def test_blank_input_does_nothing() -> None:
    interpreter, out, err = make()
    assert interpreter.handle("  -- nothing\n") is True
    assert out.getvalue() == err.getvalue() == ""


def test_query_rows_and_row_limit() -> None:
    interpreter, out, _ = make()
    interpreter.max_rows = 2
    interpreter.handle("SELECT * FROM (VALUES (1), (2), (3)) AS t(x) ORDER BY x;")
    lines = out.getvalue().splitlines()
    assert lines[:4] == ["x", "-", "1", "2"]
    assert re.fullmatch(r"3 rows in \d+\.\d\d s \(showing first 2\)", lines[4])


def test_streaming_query_prints_its_changes_as_they_come() -> None:
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    interpreter, out, _ = make(session)
    interpreter.handle(
        "SELECT k, COUNT(*) AS n FROM (VALUES ('a'), ('b'), ('a')) AS t(k) GROUP BY k;")
    assert out.getvalue().splitlines() == [
        "op | k | n", "+I | a | 1", "+I | b | 1", "-U | a | 1", "+U | a | 2", "(4 changes)"]
