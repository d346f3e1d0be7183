"""``flowsql nexmark gen`` and ``run``: the files written, a query run and timed."""

from __future__ import annotations

import argparse

import pyarrow.parquet as pq
import pytest

from flowsql.nexmark.cli import main, query_names
from flowsql.nexmark.generator import GeneratorConfig
from flowsql.nexmark.runner import run_query


def test_gen_writes_a_directory_per_table(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["nexmark", "gen", "--events", "1000", "--out", str(tmp_path)]) == 0
    assert {kind: pq.read_table(tmp_path / kind).num_rows
            for kind in ("person", "auction", "bid")} == {"person": 20, "auction": 60,
                                                          "bid": 920}
    assert "920 rows" in capsys.readouterr().out


def test_query_names() -> None:
    assert query_names("q0, Q5") == ["q0", "q5"]
    assert len(query_names("all")) == 23
    with pytest.raises(argparse.ArgumentTypeError):
        query_names("q23")


def test_run_query_into_blackhole_over_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    main(["nexmark", "gen", "--events", "2000", "--out", str(tmp_path)])
    run = run_query("q4", GeneratorConfig(events=2000), data_dir=str(tmp_path))
    assert run.error is None
    assert run.seconds is not None and run.seconds > 0
    assert run.events_per_second == pytest.approx(2000 / run.seconds)
    assert run.peak_rss_bytes is not None and run.peak_rss_bytes > 0


def test_run_query_reports_an_unsupported_query() -> None:
    run = run_query("q6", GeneratorConfig(events=100))
    assert run.seconds is None
    assert run.error is not None and "must appear in the GROUP BY clause" in run.error


def test_fixtures_need_verify(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit, match="--fixtures needs --verify"):
        main(["nexmark", "run", "--queries", "q0", "--events", "100",
              "--fixtures", str(tmp_path)])
