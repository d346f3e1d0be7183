"""INSERT INTO as a job: sinks written end to end from SQL, job handles (status, wait,
cancel, metrics), and a continuous query over a watched directory."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import CatalogError, PlanError
from flowsql.runtime.streaming.job import Job

CSV_ROWS = "a,1,2024-01-01 00:00:01\nb,2,2024-01-01 00:00:02\na,3,2024-01-01 00:00:07\n"


@pytest.fixture()
def session(tmp_path: Path) -> flowsql.Session:
    (tmp_path / "e.csv").write_text(CSV_ROWS)
    s = flowsql.connect(**{"execution.runtime-mode": "streaming",
                           "pipeline.auto-watermark-interval": "0"})
    s.sql(f"""CREATE TABLE e (k STRING, v BIGINT, ts TIMESTAMP(3),
                WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
              WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "e.csv"}',
                    'format' = 'csv')""")
    yield s
    s.close()


def test_insert_into_print_writes_flink_rows_and_counts_them(
        session: flowsql.Session, capsys: pytest.CaptureFixture[str]) -> None:
    session.sql("CREATE TABLE p (k STRING, total BIGINT) WITH ('connector' = 'print')")
    result = session.sql("INSERT INTO p SELECT k, v * 10 FROM e WHERE v > 1")
    assert result.kind == "job" and result.job.wait(30) == "FINISHED"
    assert capsys.readouterr().out.splitlines() == ["+I[b, 20]", "+I[a, 30]"]
    sink = next(m for m in result.job.metrics() if m["operator"].startswith("SinkExec"))
    assert sink["records_in"] == 2 and sink["records_written"] == 2


def test_insert_into_filesystem_then_read_back(session: flowsql.Session, tmp_path: Path
                                               ) -> None:
    out = tmp_path / "out"
    session.sql(f"""CREATE TABLE o (k STRING, v BIGINT, ts TIMESTAMP(3))
                    WITH ('connector' = 'filesystem', 'path' = '{out}',
                          'format' = 'parquet')""")
    assert session.sql("INSERT INTO o SELECT k, v, ts FROM e").job.wait(30) == "FINISHED"
    assert [p.name.startswith("part-") for p in out.iterdir()] == [True]
    rows = session.sql("SELECT k, v FROM o").to_arrow().to_pylist()
    assert sorted((r["k"], r["v"]) for r in rows) == [("a", 1), ("a", 3), ("b", 2)]


def test_insert_casts_to_the_table_types_and_fills_unnamed_columns(
        session: flowsql.Session, tmp_path: Path) -> None:
    out = tmp_path / "typed"
    session.sql(f"""CREATE TABLE t (k STRING, v DOUBLE, note STRING)
                    WITH ('connector' = 'filesystem', 'path' = '{out}')""")
    assert session.sql("INSERT INTO t (v, k) SELECT v, k FROM e WHERE k = 'a'"
                       ).job.wait(30) == "FINISHED"
    table = pq.read_table(out)
    assert table.schema.field("v").type == pa.float64()
    assert sorted(table.to_pylist(), key=lambda r: r["v"]) == [
        {"k": "a", "v": 1.0, "note": None}, {"k": "a", "v": 3.0, "note": None}]


def test_insert_errors_name_the_problem(session: flowsql.Session) -> None:
    session.sql("CREATE TABLE p (k STRING) WITH ('connector' = 'print')")
    with pytest.raises(CatalogError, match="table 'nope' does not exist"):
        session.sql("INSERT INTO nope SELECT k FROM e")
    with pytest.raises(PlanError, match="the query has 2 columns, the target 1"):
        session.sql("INSERT INTO p SELECT k, v FROM e")
    with pytest.raises(CatalogError, match="print connector needs a column list"):
        session.sql("CREATE TABLE q WITH ('connector' = 'print')")


def test_batch_mode_insert_is_a_job_too(session: flowsql.Session,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    session.sql("SET 'execution.runtime-mode' = 'batch'")
    session.sql("CREATE TABLE p (k STRING, v BIGINT) WITH ('connector' = 'print')")
    assert session.sql("INSERT INTO p SELECT k, v FROM e").job.wait(30) == "FINISHED"
    assert sorted(capsys.readouterr().out.splitlines()) == ["+I[a, 1]", "+I[a, 3]",
                                                            "+I[b, 2]"]


def _records_written(job: Job) -> int:
    """The sink's count (absent until the first write)."""
    return next(m.get("records_written", 0) for m in job.metrics()
                if m["operator"].startswith("SinkExec"))


def test_continuous_job_over_a_watched_directory_runs_until_cancelled(
        tmp_path: Path) -> None:
    incoming, out = tmp_path / "in", tmp_path / "out"
    incoming.mkdir()
    with flowsql.connect(**{"execution.runtime-mode": "streaming"}) as s:
        s.sql(f"""CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem',
                    'path' = '{incoming}', 'format' = 'csv',
                    'source.monitor-interval' = '50 ms')""")
        s.sql(f"""CREATE TABLE dst (k STRING, v BIGINT) WITH ('connector' = 'filesystem',
                    'path' = '{out}', 'format' = 'csv')""")
        s.sql("CREATE TABLE total (n BIGINT) WITH ('connector' = 'blackhole')")
        job = s.sql("INSERT INTO dst SELECT k, v FROM src WHERE v > 0").job
        (incoming / "1.csv").write_text("a,1\nb,-2\n")
        (incoming / "2.csv").write_text("c,3\n")
        # The filter is pushed into the scan, so the sink's count is the one to wait for
        # (the scan emits 2 rows, never 3).
        deadline = time.monotonic() + 20
        while _records_written(job) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _records_written(job) == 2, "the rows of both files reach the sink"
        assert job.status() == "RUNNING"
        job.cancel()
        assert job.wait(10) == "CANCELED"
        written = s.sql("SELECT k, v FROM dst").to_arrow().to_pylist()
        assert sorted((r["k"], r["v"]) for r in written) == [("a", 1), ("c", 3)]
