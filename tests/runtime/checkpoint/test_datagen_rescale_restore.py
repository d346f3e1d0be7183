"""A datagen job stopped in the middle and started again from its checkpoint at another
parallelism writes every row of its sequence exactly once into the exactly-once file
sink."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import flowsql
from tests.harness.chaos import committed_rows, latest_checkpoint

ROWS = 20_000


def _session(out: Path, checkpoints: Path, parallelism: int) -> flowsql.Session:
    session = flowsql.connect()
    for key, value in (("execution.runtime-mode", "streaming"),
                       ("parallelism.default", str(parallelism)),
                       ("execution.checkpointing.interval", "200 ms"),
                       ("execution.checkpointing.dir", str(checkpoints))):
        session.sql(f"SET '{key}' = '{value}'")
    session.sql("CREATE TABLE src (v BIGINT) WITH ('connector' = 'datagen', "
                "'rows-per-second' = '8000', 'fields.v.kind' = 'sequence', "
                f"'fields.v.start' = '1', 'fields.v.end' = '{ROWS}')")
    session.sql(f"CREATE TABLE out_t (v BIGINT) WITH ('connector' = 'filesystem', "
                f"'path' = '{out}', 'format' = 'parquet')")
    return session


@pytest.mark.parametrize(("before", "after"), [(1, 2), (2, 1)])
def test_a_rescaled_restore_writes_every_row_once(tmp_path: Path, before: int,
                                                  after: int) -> None:
    out, checkpoints = tmp_path / "out", tmp_path / "checkpoints"
    session = _session(out, checkpoints, before)
    try:
        job = session.sql("INSERT INTO out_t SELECT v FROM src").job
        deadline = time.monotonic() + 60
        while latest_checkpoint(checkpoints) is None or not committed_rows(out):
            assert time.monotonic() < deadline, "no checkpoint completed"
            time.sleep(0.1)
        job.cancel()  # stops with a final checkpoint
        job.wait(60)
    finally:
        session.close()
    checkpoint = latest_checkpoint(checkpoints)
    assert checkpoint is not None
    assert 0 < sum(committed_rows(out).values()) < ROWS, "the stop did not land midway"
    session = _session(out, checkpoints, after)
    try:
        session.sql(f"SET 'execution.savepoint.path' = '{checkpoint}'")
        assert session.sql("INSERT INTO out_t SELECT v FROM src").job.wait(120) == "FINISHED"
    finally:
        session.close()
    rows = committed_rows(out)
    assert sorted(v for (v,) in rows.elements()) == list(range(1, ROWS + 1))
    assert not sorted(p.name for p in out.glob(".*"))  # nothing left in progress
