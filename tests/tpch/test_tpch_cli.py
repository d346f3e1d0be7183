"""``flowsql tpch`` end to end through main(argv): exit status, printed table, JSON output."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flowsql.errors import FlowSQLError
from flowsql.tpch import cli
from flowsql.tpch import generate as generate_module
from flowsql.tpch.cli import main, query_list, register
from flowsql.tpch.generate import TABLES
from flowsql.tpch.runner import ENGINES, QueryRunner


def test_run_duckdb_verified_exits_zero_and_prints_the_table(
        tpch_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report_file = tmp_path / "report.json"
    status = main(["run", "--sf", "0.01", "--data", str(tpch_dir), "--engine", "duckdb",
                   "--verify", "--json", str(report_file)])
    out = capsys.readouterr().out
    assert status == 0
    rows = [line.split() for line in out.splitlines() if line.lstrip().startswith("Q")]
    assert [row[0] for row in rows] == [f"Q{n}" for n in range(1, 23)]
    assert all(row[3] == "yes" for row in rows)
    assert "22/22" in out and "peak RSS:" in out
    document = json.loads(report_file.read_text())
    assert document["sf"] == 0.01 and len(document["outcomes"]) == 22
    assert all(entry["verified"] for entry in document["outcomes"])


def test_run_without_verify_shows_a_dash(tpch_dir: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--data", str(tpch_dir), "--engine", "duckdb", "--queries", "1,3"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()
            if line.lstrip().startswith("Q")]
    assert [(row[0], row[2], row[3]) for row in rows] == [("Q1", "4", "-"), ("Q3", "10", "-")]


def _broken(data_dir: Path) -> QueryRunner:
    def run_query(sql: str) -> pa.Table:
        if "l_returnflag" in sql:  # Q1 and Q10
            raise FlowSQLError("unsupported expression")
        return pa.table({"x": [1]})
    return run_query


def test_failed_and_wrong_queries_exit_one(tpch_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(ENGINES, "broken", _broken)
    status = main(["run", "--data", str(tpch_dir), "--engine", "broken", "--verify",
                   "--queries", "1,6"])
    out = capsys.readouterr().out
    assert status == 1
    assert "error: FlowSQLError: unsupported expression" in out
    assert "row 1: column 1 (x): actual 1, expected" in out  # Q6 ran, but wrongly
    assert "0/2" in out


def test_run_on_missing_data_says_how_to_generate(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["run", "--sf", "1", "--data", str(tmp_path), "--engine", "duckdb"])
    assert status == 2
    assert f"flowsql tpch gen --sf 1 --out {tmp_path}" in capsys.readouterr().err


def test_gen_writes_one_parquet_file_per_table(tmp_path: Path) -> None:
    out = tmp_path / "sf"
    assert main(["gen", "--sf", "0.001", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t}.parquet" for t in TABLES)
    assert pq.read_metadata(out / "nation.parquet").num_rows == 25


def test_gen_failure_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(generate_module, "_generator_executable", lambda: "/bin/false")
    with pytest.raises(FlowSQLError, match="TPC-H generation at SF 0.01 failed"):
        generate_module.generate(0.01, tmp_path)
    assert main(["gen", "--sf", "0.01", "--out", str(tmp_path)]) == 2
    assert "failed" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no staging directory left behind


def test_query_list_parsing() -> None:
    assert query_list("1,3,5") == [1, 3, 5]
    assert query_list("1-3, 22") == [1, 2, 3, 22]
    for wrong in ("0", "23", "a", "", "3-1x"):
        with pytest.raises(argparse.ArgumentTypeError):
            query_list(wrong)


def test_register_adds_the_tpch_command_to_a_parent_parser() -> None:
    parser = argparse.ArgumentParser(prog="flowsql")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["tpch", "run", "--data", "d", "--engine", "duckdb",
                              "--queries", "2-4", "--repeat", "3"])
    assert args.func is cli._run
    assert (args.queries, args.repeat, args.verify) == ([2, 3, 4], 3, False)
