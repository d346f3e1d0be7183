"""The ``flowsql`` command: sources of SQL, output formats, exit statuses, error reporting."""

from __future__ import annotations

import datetime
import io
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flowsql.cli import main
from flowsql.session import Session

ROOT = Path(__file__).resolve().parent.parent

#: one setting that is not among the defaults, set to true
ONE_KEY = "table.exec.mini-batch.enabled"
SET_ONE = f"SET '{ONE_KEY}' = 'true'"
ONE_SET = f"{ONE_KEY} = true"
SETTINGS_TABLE = "\n".join([
    "key                                | value",
    "-----------------------------------+-------",
    "engine                             | local",
    "execution.batch-size               | 65536",
    "execution.buffer-rows              | 65536",
    "execution.buffer-size              | 1mb",
    "execution.buffer-timeout           | 100",
    "execution.channel-credits          | 4",
    "execution.memory-budget            | 25%",
    "execution.runtime-mode             | batch",
    "max_parallelism                    | 128",
    "optimizer.broadcast-threshold-rows | 100000",
    "parallelism.default                | 1",
    "pipeline.auto-watermark-interval   | 200",
    "table.exec.mini-batch.enabled      | true",
    "13 rows",
])


@pytest.fixture
def parquet_table(tmp_path: Path) -> str:
    """A CREATE TABLE statement over a small file with a NULL, a decimal, a date, a comma."""
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "price": pa.array([Decimal("1.50"), None], pa.decimal128(15, 2)),
        "day": pa.array([datetime.date(2024, 1, 31), datetime.date(1999, 12, 1)]),
        "note": pa.array(["a,b", None], pa.string()),
    }), path)
    return f"CREATE TABLE t WITH ('connector'='filesystem', 'path'='{path}', 'format'='parquet')"


def test_command_with_two_statements(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-c", f"{SET_ONE}; SET"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ONE_SET + "\n\n" + SETTINGS_TABLE + "\n"
    assert captured.err == ""


def test_file_and_settings_from_the_command_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "script.sql"
    script.write_text("-- settings\nSET;\n")
    assert main(["--set", f"{ONE_KEY}=true", "-f", str(script)]) == 0
    assert capsys.readouterr().out == SETTINGS_TABLE + "\n"


def test_script_from_piped_stdin(monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{SET_ONE};\nSET;\n"))
    assert main([]) == 0
    assert capsys.readouterr().out == ONE_SET + "\n\n" + SETTINGS_TABLE + "\n"


def test_queries_as_tables(parquet_table: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-c", f"{parquet_table}; SELECT * FROM t ORDER BY id; SELECT 1 AS one"]) == 0
    assert capsys.readouterr().out == "\n".join([
        "Table 't' created",
        "",
        "id | price | day        | note",
        "---+-------+------------+-----",
        " 1 |  1.50 | 2024-01-31 | a,b",
        " 2 |  NULL | 1999-12-01 | NULL",
        "2 rows",
        "",
        "one",
        "---",
        "  1",
        "1 row",
        "",
    ])


def test_csv_output(parquet_table: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--format", "csv", "-c", f"{parquet_table}; SELECT * FROM t ORDER BY id"]) == 0
    captured = capsys.readouterr()
    assert captured.out == 'id,price,day,note\n1,1.50,2024-01-31,"a,b"\n2,,1999-12-01,\n'
    assert captured.err == "Table 't' created\n"


def test_json_output(parquet_table: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--format", "json", "-c", f"{parquet_table}; SELECT * FROM t ORDER BY id"]) == 0
    assert capsys.readouterr().out == (
        '{"id":1,"price":1.50,"day":"2024-01-31","note":"a,b"}\n'
        '{"id":2,"price":null,"day":"1999-12-01","note":null}\n')


def test_settings_listing_as_csv_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--format", "csv", "--set", f"{ONE_KEY}=true", "-c", "SET"]) == 0
    assert capsys.readouterr().out == (
        "key,value\nengine,local\nexecution.batch-size,65536\nexecution.buffer-rows,65536\n"
        "execution.buffer-size,1mb\nexecution.buffer-timeout,100\nexecution.channel-credits,4\n"
        "execution.memory-budget,25%\nexecution.runtime-mode,batch\nmax_parallelism,128\n"
        "optimizer.broadcast-threshold-rows,100000\nparallelism.default,1\n"
        "pipeline.auto-watermark-interval,200\ntable.exec.mini-batch.enabled,true\n")
    assert main(["--format", "json", "--set", f"{ONE_KEY}=true", "-c", "SET"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f'{{"key":"{ONE_KEY}","value":"true"}}'


def test_sql_error_exits_1_without_traceback_after_earlier_results(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-c", f"{SET_ONE}; DESCRIBE missing; SET 'engine' = 'spark'"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ONE_SET + "\n"
    assert captured.err.startswith("Error: ") and "missing" in captured.err
    assert "Traceback" not in captured.err


def test_syntax_error_shows_position(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-c", "SELEC 1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: ")
    assert "(line 1, col" in err and "\n  SELEC 1\n" in err
    assert "Traceback" not in err


def test_bad_setting_value_and_unreadable_file(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--set", "execution.memory-budget=lots", "-c", "SET"]) == 1
    assert capsys.readouterr().err.startswith("Error: invalid size 'lots'")
    assert main(["-f", str(tmp_path / "absent.sql")]) == 1
    assert capsys.readouterr().err.startswith(f"Error: cannot read {tmp_path / 'absent.sql'}")


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--set", "no-equals-sign", "-c", "SET"]) == 2
    assert "expected KEY=VALUE" in capsys.readouterr().err
    assert main(["-c", "SET", "-f", "x.sql"]) == 2
    assert main(["--help"]) == 0
    assert "--format" in capsys.readouterr().out


def test_internal_error_is_one_line_unless_debugging(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    def broken(self: Session, text: str) -> None:
        raise RuntimeError("kaput")

    monkeypatch.setattr(Session, "run_script", broken)
    assert main(["-c", "SET"]) == 2
    assert capsys.readouterr().err == (
        "Internal error: RuntimeError: kaput (run with --debug for the traceback)\n")
    assert main(["--debug", "-c", "SET"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.endswith("Internal error: RuntimeError: kaput\n")


def test_interrupt_exits_130_quietly(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(self: Session, text: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Session, "run_script", interrupted)
    assert main(["-c", "SET"]) == 130
    assert capsys.readouterr() == ("", "")


def test_tpch_command_reports_when_it_cannot_load(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "flowsql.tpch.cli", None)
    assert main(["tpch", "run", "--data", "x"]) == 1
    assert capsys.readouterr().err.startswith("Error: the 'tpch' command is unavailable (")


def test_tpch_command_is_registered(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tpch", "--help"]) == 0
    assert "gen" in capsys.readouterr().out


def test_python_dash_m(tmp_path: Path) -> None:
    ok = subprocess.run([sys.executable, "-m", "flowsql", "-c", f"{SET_ONE}; SET"],
                        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, ONE_SET + "\n\n" + SETTINGS_TABLE + "\n", "")
    failed = subprocess.run([sys.executable, "-m", "flowsql", "-c", "DESCRIBE missing"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1
    assert failed.stdout == ""
    assert failed.stderr.startswith("Error: ") and "Traceback" not in failed.stderr
