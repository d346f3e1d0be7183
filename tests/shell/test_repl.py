"""The prompt-toolkit front end driven through a pipe: multi-line input, history, quitting."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from flowsql.session import connect
from flowsql.shell.repl import history_path, run_repl

ENTER = "\r"


def drive(keys: str, monkeypatch: pytest.MonkeyPatch, history: Path) -> tuple[int, str, str]:
    monkeypatch.setenv("FLOWSQL_HISTORY", str(history))
    out, err = io.StringIO(), io.StringIO()
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        status = run_repl(connect(), input=pipe, output=DummyOutput(), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def test_statement_over_two_lines_runs_and_backslash_q_quits(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    history = tmp_path / "history"
    keys = (f"SET 'execution.runtime-mode'{ENTER}= 'streaming';{ENTER}\\q{ENTER}"
            f"SET 'spark.broadcast-rows' = '5';{ENTER}")
    status, out, err = drive(keys, monkeypatch, history)
    assert status == 0
    assert err == ""
    lines = out.splitlines()
    assert lines[0].startswith("flowsql ")
    assert lines[2] == "execution.runtime-mode = streaming"
    assert "spark.broadcast-rows" not in out
    # The two lines were one submission, stored as one history entry.
    entries = [line for line in history.read_text().splitlines() if line.startswith("+")]
    assert entries == ["+SET 'execution.runtime-mode'", "+= 'streaming';", "+\\q"]


def test_query_typed_over_two_lines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keys = f"SELECT 41 + 1{ENTER}  AS answer;{ENTER}quit{ENTER}"
    status, out, err = drive(keys, monkeypatch, tmp_path / "history")
    assert (status, err) == (0, "")
    assert out.splitlines()[2:5] == ["answer", "------", "    42"]


def test_errors_do_not_end_the_session_and_ctrl_d_quits(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    keys = f"\\d missing{ENTER}SET 'execution.runtime-mode' = 'streaming';{ENTER}\x04"
    status, out, err = drive(keys, monkeypatch, tmp_path / "history")
    assert status == 0
    assert err.startswith("Error: ") and "missing" in err
    assert "execution.runtime-mode = streaming" in out


def test_history_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FLOWSQL_HISTORY", str(tmp_path / "h"))
    assert history_path() == tmp_path / "h"
    monkeypatch.setenv("FLOWSQL_HISTORY", "")
    assert history_path() is None
    monkeypatch.delenv("FLOWSQL_HISTORY")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert history_path() == tmp_path / ".flowsql_history"
