"""Statement sets at parallelism 1 and 2, batch and streaming, with and without
checkpointing: both sinks compared in full with DuckDB over the same source, and the shared
source read once (its scan's rows in the job's metrics, or the rows of its one read)."""

from __future__ import annotations

import csv
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.runtime.statement_set_run import SHARED_QUEUE_BATCHES, ConcurrentStatementSetRun

N = 3000
ROWS = [(i, f"k{i % 7}", (i * 37) % 1000) for i in range(1, N + 1)]

#: (target, its columns, the query over src) -- a filter, a projection, a join with a
#: dimension table and an aggregate (batch only: a streaming aggregate updates)
INSERTS = {
    "big": ("id BIGINT, v BIGINT", "SELECT id, v FROM src WHERE v > 500"),
    "evens": ("id BIGINT, w BIGINT", "SELECT id, v * 2 FROM src WHERE id % 2 = 0"),
    "named": ("id BIGINT, name STRING",
              "SELECT s.id, d.name FROM src s JOIN dim d ON s.k = d.k WHERE s.id % 5 = 0"),
}
BATCH_ONLY = {"sums": ("k STRING, n BIGINT, total BIGINT",
                       "SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k")}


def _write_sources(directory: Path) -> tuple[Path, Path]:
    source, dim = directory / "src.csv", directory / "dim.csv"
    with source.open("w", newline="") as f:
        csv.writer(f).writerows(ROWS)
    with dim.open("w", newline="") as f:
        csv.writer(f).writerows([(f"k{i}", f"name{i}") for i in range(7)])
    return source, dim


def _session(tmp_path: Path, mode: str, parallelism: int, targets: dict[str, Any],
             **settings: str) -> flowsql.Session:
    source, dim = _write_sources(tmp_path)
    s = flowsql.connect(**{"execution.runtime-mode": mode,
                           "parallelism.default": str(parallelism), **settings})
    s.sql(f"""CREATE TABLE src (id BIGINT, k STRING, v BIGINT) WITH (
                'connector' = 'filesystem', 'path' = '{source}', 'format' = 'csv')""")
    s.sql(f"""CREATE TABLE dim (k STRING, name STRING) WITH (
                'connector' = 'filesystem', 'path' = '{dim}', 'format' = 'csv')""")
    for name, (columns, _) in targets.items():
        (tmp_path / name).mkdir()
        s.sql(f"""CREATE TABLE {name} ({columns}) WITH ('connector' = 'filesystem',
                    'path' = '{tmp_path / name}', 'format' = 'parquet')""")
    return s


def _expected(query: str) -> Counter[tuple[Any, ...]]:
    con = duckdb.connect()
    con.register("src", pa.table({"id": [r[0] for r in ROWS], "k": [r[1] for r in ROWS],
                                  "v": [r[2] for r in ROWS]}))
    con.register("dim", pa.table({"k": [f"k{i}" for i in range(7)],
                                  "name": [f"name{i}" for i in range(7)]}))
    return Counter(con.execute(query).fetchall())


def _written(directory: Path) -> Counter[tuple[Any, ...]]:
    files = sorted(directory.glob("*.parquet"))
    assert files, f"nothing committed in {directory}"
    assert not list(directory.glob(".*")), "files left in progress"
    table = pa.concat_tables([pq.read_table(f) for f in files])
    return Counter(zip(*(table.column(i).to_pylist() for i in range(table.num_columns))))


def _statement_set(targets: dict[str, Any]) -> str:
    body = "".join(f"INSERT INTO {name} {query};\n" for name, (_, query) in targets.items())
    return f"EXECUTE STATEMENT SET BEGIN\n{body}END;"


def _source_rows(metrics: list[dict[str, Any]]) -> list[int]:
    """The rows each scan of ``src`` emitted, from a job's metrics (worker runs)."""
    return [m["records_out"] for m in metrics
            if m["operator"].startswith(("TableScanExec (table src)",
                                         "TableScanExec (table seq)"))]


@pytest.fixture(params=[1, 2], ids=["p1", "p2"])
def parallelism(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_every_sink_gets_its_rows_from_one_read(tmp_path: Path, mode: str,
                                                parallelism: int) -> None:
    targets = {**INSERTS, **(BATCH_ONLY if mode == "batch" else {})}
    s = _session(tmp_path, mode, parallelism, targets)
    try:
        [result] = list(s.run_script(_statement_set(targets)))
        job = result.job
        assert job.wait(120) == "FINISHED"
        for name, (_, query) in targets.items():
            assert _written(tmp_path / name) == _expected(query), name
        if parallelism > 1:
            # one scan of src (its subtasks together read every row once), whatever the
            # number of INSERTs reading it
            assert _source_rows(job.metrics()) == [N]
        elif mode == "batch":
            run = job._run
            assert isinstance(run, ConcurrentStatementSetRun)
            tee = run.tees["src"]
            assert tee.rows_read == N
            assert tee.peak_waiting <= SHARED_QUEUE_BATCHES
    finally:
        s.close()


@pytest.mark.parametrize("mode", ["batch", "streaming"])
def test_separate_inserts_at_parallelism_2_write_the_same_rows(tmp_path: Path,
                                                               mode: str) -> None:
    """Each INSERT alone (a batch INSERT whose plan has exchanges runs on the workers)."""
    s = _session(tmp_path, mode, 2, INSERTS)
    try:
        for name, (_, query) in INSERTS.items():
            job = s.sql(f"INSERT INTO {name} {query}").job
            assert job.wait(120) == "FINISHED"
            assert _written(tmp_path / name) == _expected(query), name
    finally:
        s.close()


def test_batch_inserts_read_the_shared_table_together(tmp_path: Path) -> None:
    """Many small batches: the INSERTs take them as they are read, so no more than the
    queue's few batches ever wait for one INSERT (the whole table did before)."""
    s = _session(tmp_path, "batch", 1, INSERTS, **{"execution.batch-size": "16"})
    try:
        [result] = list(s.run_script(_statement_set(INSERTS)))
        assert result.job.wait(120) == "FINISHED"
        tee = result.job._run.tees["src"]
        assert tee.batches_read >= N // 16
        assert tee.peak_waiting <= SHARED_QUEUE_BATCHES
        for name, (_, query) in INSERTS.items():
            assert _written(tmp_path / name) == _expected(query), name
    finally:
        s.close()


def test_a_self_join_keeps_its_own_reads(tmp_path: Path) -> None:
    """An INSERT reading src twice does not share those reads (one side of its join would
    wait for the other); the INSERTs reading src once still share theirs."""
    targets = {**INSERTS,
               "pairs": ("a BIGINT, b BIGINT",
                         "SELECT x.id, y.id FROM src x JOIN src y ON x.id = y.id + 1 "
                         "WHERE x.id % 100 = 0")}
    s = _session(tmp_path, "batch", 1, targets, **{"execution.batch-size": "64"})
    try:
        [result] = list(s.run_script(_statement_set(targets)))
        assert result.job.wait(120) == "FINISHED"
        for name, (_, query) in targets.items():
            assert _written(tmp_path / name) == _expected(query), name
        assert result.job._run.tees["src"].group.consumers == len(INSERTS)
    finally:
        s.close()


def test_a_failing_insert_fails_the_set_without_hanging(tmp_path: Path) -> None:
    targets = {**INSERTS, "bad": ("x BIGINT", "SELECT CAST(k AS BIGINT) FROM src")}
    s = _session(tmp_path, "batch", 1, targets, **{"execution.batch-size": "16"})
    try:
        [result] = list(s.run_script(_statement_set(targets)))
        with pytest.raises(flowsql.FlowSQLError):
            result.job.wait(120)
        assert result.job.status() == "FAILED"
    finally:
        s.close()


# checkpointing ----------------------------------------------------------------------------

SEQUENCE = 8000


def _checkpointed_session(tmp_path: Path, parallelism: int, rate: int = 2000
                          ) -> flowsql.Session:
    s = flowsql.connect()
    for key, value in (("execution.runtime-mode", "streaming"),
                       ("parallelism.default", str(parallelism)),
                       ("execution.checkpointing.interval", "200 ms"),
                       ("execution.checkpointing.dir", str(tmp_path / "checkpoints")),
                       ("restart-strategy.type", "fixed-delay"),
                       ("restart-strategy.fixed-delay.attempts", "5"),
                       ("restart-strategy.fixed-delay.delay", "100 ms")):
        s.sql(f"SET '{key}' = '{value}'")
    s.sql(f"""CREATE TABLE seq (v BIGINT) WITH ('connector' = 'datagen',
                'rows-per-second' = '{rate}', 'fields.v.kind' = 'sequence',
                'fields.v.start' = '1', 'fields.v.end' = '{SEQUENCE}')""")
    for name in ("a", "b"):
        s.sql(f"""CREATE TABLE {name} (v BIGINT, w BIGINT) WITH ('connector' = 'filesystem',
                    'path' = '{tmp_path / name}', 'format' = 'parquet')""")
    return s


CHECKPOINTED_SET = """EXECUTE STATEMENT SET BEGIN
    INSERT INTO a SELECT v, v * 2 FROM seq WHERE v % 3 <> 0;
    INSERT INTO b SELECT v, v + 1 FROM seq WHERE v % 5 = 0;
END;"""
EXPECTED_A = Counter((v, v * 2) for v in range(1, SEQUENCE + 1) if v % 3)
EXPECTED_B = Counter((v, v + 1) for v in range(1, SEQUENCE + 1) if v % 5 == 0)


def _wait_for_checkpoint(job: Any, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while job.info().last_checkpoint is None:
        assert job.status() == "RUNNING", job.status()
        assert time.monotonic() < deadline, "no checkpoint completed"
        time.sleep(0.05)


def test_checkpointed_statement_set_commits_every_row_once(tmp_path: Path,
                                                           parallelism: int) -> None:
    """Barriers pass the shared read's fan-out: checkpoints complete while it runs and
    each sink commits exactly its rows."""
    s = _checkpointed_session(tmp_path, parallelism)
    try:
        [result] = list(s.run_script(CHECKPOINTED_SET))
        job = result.job
        _wait_for_checkpoint(job)
        assert job.wait(120) == "FINISHED"
        assert job.info().checkpoints_completed >= 2
        assert _written(tmp_path / "a") == EXPECTED_A
        assert _written(tmp_path / "b") == EXPECTED_B
        assert _source_rows(job.metrics()) == [SEQUENCE]
    finally:
        s.close()


def test_statement_set_recovers_from_a_killed_worker(tmp_path: Path,
                                                    parallelism: int) -> None:
    """kill -9 of the worker after a checkpoint: the job restarts from it (the shared
    read from its recorded position, the sinks from their pending files) and the committed
    output is exactly the failure-free one."""
    s = _checkpointed_session(tmp_path, parallelism, rate=800)  # ~10 s: the kill lands inside
    try:
        [result] = list(s.run_script(CHECKPOINTED_SET))
        job = result.job
        _wait_for_checkpoint(job)
        assert s.parallel_runner is not None
        os.kill(s.parallel_runner.worker_pids[0], signal.SIGKILL)
        assert job.wait(120) == "FINISHED"
        assert job.info().restarts >= 1
        assert _written(tmp_path / "a") == EXPECTED_A
        assert _written(tmp_path / "b") == EXPECTED_B
    finally:
        s.close()

