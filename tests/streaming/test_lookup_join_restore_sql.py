"""A lookup join stopped with a savepoint in the middle of its probe stream and started
again from it: the committed output is exactly the uninterrupted run's (every probe row
once, joined with the table), although the checkpoint holds nothing of the table -- the
restored operator reads it again when it opens."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import flowsql
from tests.harness.chaos import committed_rows

ROWS = 10_000
RATE = 5_000
KEYS = 23
MISSING_KEY = 5  # no row in the table: the LEFT join pads it

QUERY = """INSERT INTO out_t SELECT s.v, s.k, d.name FROM src AS s
           LEFT JOIN dim FOR SYSTEM_TIME AS OF s.pt AS d ON s.k = d.k"""


def _session(tmp: Path, dim: Path) -> Any:
    session = flowsql.connect()
    for key, value in (("execution.runtime-mode", "streaming"), ("parallelism.default", "2"),
                       ("execution.checkpointing.interval", "300 ms"),
                       ("execution.checkpointing.dir", str(tmp / "checkpoints")),
                       ("execution.checkpointing.savepoint-dir", str(tmp / "savepoints"))):
        session.sql(f"SET '{key}' = '{value}'")
    session.sql(f"""CREATE TABLE src (v BIGINT, k AS v % {KEYS}, pt AS PROCTIME())
                    WITH ('connector' = 'datagen', 'rows-per-second' = '{RATE}',
                          'fields.v.kind' = 'sequence', 'fields.v.start' = '1',
                          'fields.v.end' = '{ROWS}')""")
    session.sql(f"""CREATE TABLE dim (k BIGINT, name STRING)
                    WITH ('connector' = 'filesystem', 'path' = '{dim}')""")
    session.sql(f"""CREATE TABLE out_t (v BIGINT, k BIGINT, name STRING)
                    WITH ('connector' = 'filesystem', 'path' = '{tmp / 'out'}',
                          'format' = 'parquet')""")
    return session


def _expected() -> Counter[tuple[Any, ...]]:
    return Counter((v, v % KEYS, None if v % KEYS == MISSING_KEY else f"key-{v % KEYS}")
                   for v in range(1, ROWS + 1))


def test_a_lookup_join_stopped_and_restored_writes_each_row_once(tmp_path: Path) -> None:
    dim = tmp_path / "dim.parquet"
    keys = [k for k in range(KEYS) if k != MISSING_KEY]
    pq.write_table(pa.table({"k": pa.array(keys, pa.int64()),
                             "name": [f"key-{k}" for k in keys]}), dim)
    out = tmp_path / "out"
    session = _session(tmp_path, dim)
    try:
        job = session.sql(QUERY).job
        deadline = time.monotonic() + 120
        while not committed_rows(out):
            assert job.status() == "RUNNING", f"the job ended {job.status()} before the stop"
            assert time.monotonic() < deadline, "nothing was committed"
            time.sleep(0.05)
        savepoint = session.sql(f"STOP JOB '{job.id}' WITH SAVEPOINT").to_arrow().column(
            "savepoint path")[0].as_py()
    finally:
        session.close()
    stopped = committed_rows(out)
    assert 0 < sum(stopped.values()) < ROWS, "the stop did not land inside the input"
    assert stopped <= _expected()

    session = _session(tmp_path, dim)
    try:
        session.sql(f"SET 'execution.savepoint.path' = '{savepoint}'")
        assert session.sql(QUERY).job.wait(180) == "FINISHED"
    finally:
        session.close()
    assert committed_rows(out) == _expected()
