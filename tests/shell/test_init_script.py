"""``flowsql -i FILE``: the init script runs in the session before the SQL or the shell."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowsql.cli import main


def test_init_script_runs_before_the_command(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    init = tmp_path / "init.sql"
    init.write_text("SET 'execution.batch-size' = '7';\n"
                    "CREATE VIEW v AS SELECT 1 AS x UNION ALL SELECT 2;\n")
    status = main(["-i", str(init), "--format", "csv", "-c",
                   "SELECT x * 10 AS y FROM v ORDER BY y; SET;"])
    captured = capsys.readouterr()
    assert status == 0
    lines = captured.out.splitlines()
    assert lines[:3] == ["y", "10", "20"]
    assert "execution.batch-size,7" in lines


def test_an_error_in_the_init_script_exits_1_before_the_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    init = tmp_path / "init.sql"
    init.write_text("SET 'no.such.key' = '1';\n")
    status = main(["-i", str(init), "-c", "SELECT 42 AS never"])
    captured = capsys.readouterr()
    assert status == 1
    assert captured.out == ""
    assert captured.err.startswith("Error: unknown setting 'no.such.key'")


def test_init_cannot_be_combined_with_a_sub_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-i", str(tmp_path / "x.sql"), "tpch", "gen", "--sf", "0.01", "--out",
                 str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        "flowsql: error: -c/-f/-i cannot be combined with 'tpch'\n")
