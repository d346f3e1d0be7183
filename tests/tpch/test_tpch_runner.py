"""The runner times an engine, verifies each answer against DuckDB in a separate process,
records failures without stopping, and refuses to start on an incomplete data directory."""

from __future__ import annotations

import datetime as dt
import functools
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from flowsql.errors import FlowSQLError
from flowsql.tpch import runner
from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from flowsql.tpch.runner import ENGINES, QueryRunner, run_benchmark
from flowsql.tpch.verify import compare_tables


def _money(text: str) -> pa.Scalar:
    return pa.scalar(Decimal(text), pa.decimal128(15, 2))


def test_duckdb_engine_answers_q6_like_a_direct_computation(tpch_dir: Path) -> None:
    lineitem = pq.read_table(tpch_dir / "lineitem.parquet", columns=[
        "l_shipdate", "l_discount", "l_quantity", "l_extendedprice"])
    ship, discount = lineitem["l_shipdate"], lineitem["l_discount"]
    keep = functools.reduce(pc.and_, [
        pc.greater_equal(ship, pa.scalar(dt.date(1994, 1, 1))),
        pc.less(ship, pa.scalar(dt.date(1995, 1, 1))),
        pc.greater_equal(discount, _money("0.05")),
        pc.less_equal(discount, _money("0.07")),
        pc.less(lineitem["l_quantity"], _money("24")),
    ])
    chosen = lineitem.filter(keep)
    revenue = pc.sum(pc.multiply(chosen["l_extendedprice"], chosen["l_discount"]))
    expected = pa.table({"revenue": pa.array([revenue.as_py()], revenue.type)})

    run_query = ENGINES["duckdb"](tpch_dir)
    assert compare_tables(run_query(load_query(6)), expected, ordered=False) == []


def test_duckdb_engine_counts_q1_groups_like_a_direct_computation(tpch_dir: Path) -> None:
    lineitem = pq.read_table(tpch_dir / "lineitem.parquet", columns=[
        "l_returnflag", "l_linestatus", "l_quantity", "l_shipdate"])
    flags = pa.table({"flag": pc.cast(lineitem["l_returnflag"], pa.string()),
                      "status": pc.cast(lineitem["l_linestatus"], pa.string()),
                      "quantity": lineitem["l_quantity"]})
    shipped = pc.less_equal(lineitem["l_shipdate"], pa.scalar(dt.date(1998, 9, 2)))
    expected = (flags.filter(shipped).group_by(["flag", "status"])
                .aggregate([("quantity", "sum"), ("quantity", "count")]))

    answer = ENGINES["duckdb"](tpch_dir)(load_query(1))
    actual = answer.select(["l_returnflag", "l_linestatus", "sum_qty", "count_order"])
    assert compare_tables(actual, expected, ordered=False) == []


def test_duckdb_run_verifies_all_22_queries(tpch_dir: Path) -> None:
    seen: list[int] = []
    report = run_benchmark("duckdb", tpch_dir, verify=True, repeat=2, sf=0.01,
                           on_outcome=lambda outcome: seen.append(outcome.query))
    assert seen == list(QUERY_NUMBERS)
    assert not report.failed
    for outcome in report.outcomes:
        assert outcome.error is None and outcome.differences == []
        assert outcome.verified is True
        assert len(outcome.times) == 2 and outcome.seconds == min(outcome.times)
        assert outcome.verify_seconds is not None and outcome.verify_seconds > 0
        assert outcome.rows is not None and outcome.rows > 0
    assert report.peak_rss_bytes > 10 * 2**20
    document = report.to_json()
    assert document["engine"] == "duckdb"
    assert [entry["verified"] for entry in document["outcomes"]] == [True] * 22


def _wrong_on_q4(data_dir: Path) -> QueryRunner:
    """DuckDB, except that Q4 loses its last row and Q5 raises."""
    duckdb_query = runner.open_duckdb(data_dir)

    def run_query(sql: str) -> pa.Table:
        if sql == load_query(5):
            raise FlowSQLError("no plan for Q5")
        result = duckdb_query(sql)
        return result.slice(0, result.num_rows - 1) if sql == load_query(4) else result
    return run_query


def test_failures_are_recorded_and_the_run_goes_on(tpch_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ENGINES, "faulty", _wrong_on_q4)
    report = run_benchmark("faulty", tpch_dir, queries=[4, 5, 6], verify=True)
    q4, q5, q6 = report.outcomes
    assert q4.verified is False and q4.differences == ["row count differs: actual 4, expected 5"]
    assert q5.error == "FlowSQLError: no plan for Q5" and q5.verified is None
    assert q5.seconds is None and q5.rows is None
    assert q6.verified is True
    assert report.failed


def test_without_verify_nothing_is_verified(tpch_dir: Path) -> None:
    report = run_benchmark("duckdb", tpch_dir, queries=[6])
    assert report.outcomes[0].verified is None
    assert report.outcomes[0].verify_seconds is None
    assert not report.failed


def test_incomplete_data_directory_says_how_to_generate(tmp_path: Path) -> None:
    (tmp_path / "region.parquet").write_bytes(b"")
    with pytest.raises(FlowSQLError, match=r"lacks .*nation\.parquet.*flowsql tpch gen "
                                           r"--sf 0\.5 --out"):
        run_benchmark("duckdb", tmp_path, sf=0.5)


def test_unknown_engine_is_rejected(tpch_dir: Path) -> None:
    with pytest.raises(FlowSQLError, match="unknown engine 'oracle'"):
        run_benchmark("oracle", tpch_dir)


def test_engine_that_cannot_load_tables_stops_the_run(tpch_dir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def cannot_load(data_dir: Path) -> QueryRunner:
        raise FlowSQLError("connector filesystem is not available")
    monkeypatch.setitem(ENGINES, "unloadable", cannot_load)
    with pytest.raises(FlowSQLError, match="could not load the TPC-H tables: .*connector"):
        run_benchmark("unloadable", tpch_dir)


def test_local_run_at_parallelism_two_verifies(tpch_dir: Path) -> None:
    report = run_benchmark("local", tpch_dir, queries=[3, 6], verify=True, parallelism=2)
    assert not report.failed
    assert [o.verified for o in report.outcomes] == [True, True]


def test_parallelism_is_refused_for_another_engine(tpch_dir: Path) -> None:
    with pytest.raises(FlowSQLError, match="local engine only"):
        run_benchmark("duckdb", tpch_dir, queries=[6], parallelism=2)
