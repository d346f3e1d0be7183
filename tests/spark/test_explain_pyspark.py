"""EXPLAIN PYSPARK shows the program that runs: settings that shape the program
(``spark.broadcast-rows``) are honoured by both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
import flowsql.spark.run as spark_run
from tests.harness.spark import SPARK_TEST_SETTINGS

JOIN = "SELECT t.id, u.v FROM t JOIN u ON t.k = u.k"


@pytest.fixture
def session(tmp_path: Path) -> flowsql.Session:
    pq.write_table(pa.table({"id": [1, 2, 3, 4], "k": [1, 2, 2, 5]}), tmp_path / "t.parquet")
    pq.write_table(pa.table({"k": [1, 2], "v": ["one", "two"]}), tmp_path / "u.parquet")
    session = flowsql.connect(engine="spark", **SPARK_TEST_SETTINGS)
    for name in ("t", "u"):
        session.sql(f"CREATE TABLE {name} WITH ('path'='{tmp_path / (name + '.parquet')}')")
    return session


def _explained(session: flowsql.Session) -> str:
    source = session.sql("EXPLAIN PYSPARK " + JOIN).plan_text
    assert source is not None
    return source


def _ran(session: flowsql.Session, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[Any]]:
    sources: list[str] = []
    build = spark_run.build_dataframe

    def recording(source: str, spark: Any) -> Any:
        sources.append(source)
        return build(source, spark)

    monkeypatch.setattr(spark_run, "build_dataframe", recording)
    rows = sorted(session.sql(JOIN).to_arrow().to_pylist(), key=lambda r: r["id"])
    assert len(sources) == 1
    return sources[0], rows


def test_explain_pyspark_shows_the_program_that_runs_under_the_broadcast_setting(
        session: flowsql.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    expected_rows = [{"id": 1, "v": "one"}, {"id": 2, "v": "two"}, {"id": 3, "v": "two"}]
    default = _explained(session)
    assert "F.broadcast(" in default
    assert _ran(session, monkeypatch) == (default, expected_rows)

    session.sql("SET 'spark.broadcast-rows' = '0'")
    no_broadcast = _explained(session)
    assert "F.broadcast(" not in no_broadcast
    assert _ran(session, monkeypatch) == (no_broadcast, expected_rows)
