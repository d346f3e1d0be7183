"""Stop a streaming job with a savepoint in the middle of its input, start the same
statement from the savepoint (``execution.savepoint.path``) in a new session: the final
result equals one uninterrupted run's, computed by hand from the deterministic source.

The savepoint is always restored from a copy, after the original and the job's checkpoint
directory were deleted: it is self-contained. Backends may differ between the two runs
(rocksdb with incremental checkpoints writes the same canonical savepoint as hashmap).
The parallelism stays the same: operator ids are positions in the stage plans.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import flowsql
from flowsql.errors import ConfigError, ExecutionError
from tests.harness.chaos import committed_rows, create_sources

ROWS = 30_000
RATE = 5_000
KEYS = 23

TUMBLE_SINK = "ws TIMESTAMP(3), we TIMESTAMP(3), k INT, c BIGINT, s BIGINT"
TUMBLE = ("SELECT window_start, window_end, k, COUNT(*), SUM(v) FROM TABLE(TUMBLE("
          "TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, "
          "window_end, k")
GROUP_BY = "SELECT k, COUNT(*) AS c, SUM(v) AS s FROM src GROUP BY k"

#: (backend of the stopped run, backend of the restored run)
BACKENDS = [("hashmap", "hashmap"), ("rocksdb", "rocksdb"), ("hashmap", "rocksdb"),
            ("rocksdb", "hashmap")]


def _expected_tumble(last: int = ROWS) -> Counter[tuple[Any, ...]]:
    """The windows of v = 1..last: ts = v * 10 ms, so the window of v starts at second
    v // 100."""
    groups: dict[tuple[int, int], list[int]] = {}
    for v in range(1, last + 1):
        groups.setdefault((v // 100, v % KEYS), []).append(v)
    epoch = datetime(1970, 1, 1)
    return Counter((epoch + timedelta(seconds=w), epoch + timedelta(seconds=w + 1), k,
                    len(vs), sum(vs)) for (w, k), vs in groups.items())


def _expected_group_by() -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return {(k,): (k, len(range(k or KEYS, ROWS + 1, KEYS)),
                   sum(range(k or KEYS, ROWS + 1, KEYS))) for k in range(KEYS)}


def _session(tmp: Path, parallelism: int, backend: str) -> Any:
    session = flowsql.connect()
    for key, value in (("execution.runtime-mode", "streaming"),
                       ("parallelism.default", str(parallelism)),
                       ("execution.checkpointing.interval", "300 ms"),
                       ("execution.checkpointing.dir", str(tmp / "checkpoints")),
                       ("execution.checkpointing.savepoint-dir", str(tmp / "savepoints")),
                       ("execution.checkpointing.incremental", "true"),
                       ("state.backend.type", backend)):
        session.sql(f"SET '{key}' = '{value}'")
    create_sources(session, rows=ROWS, rate=RATE)
    return session


def _wait_until_committed(out: Path, job: Any, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not committed_rows(out):
        assert job.status() == "RUNNING", f"the job ended {job.status()} before the stop"
        assert time.monotonic() < deadline, "nothing was committed"
        time.sleep(0.05)


def _relocated(savepoint: str, tmp: Path) -> Path:
    """A copy of the savepoint elsewhere; the original and the job's checkpoints are
    deleted, so the restore can only read the copy."""
    copy = tmp / "moved" / Path(savepoint).name
    shutil.copytree(savepoint, copy)
    shutil.rmtree(savepoint)
    shutil.rmtree(tmp / "checkpoints")
    return copy


@pytest.mark.parametrize(("before", "after"), BACKENDS)
@pytest.mark.parametrize("parallelism", [1, 2])
def test_tumble_into_files_stopped_and_restored_equals_one_run(
        tmp_path: Path, parallelism: int, before: str, after: str) -> None:
    out = tmp_path / "out"
    sink = (f"CREATE TABLE out_t ({TUMBLE_SINK}) WITH ('connector' = 'filesystem', "
            f"'path' = '{out}', 'format' = 'parquet')")
    session = _session(tmp_path, parallelism, before)
    try:
        session.sql(sink)
        job = session.sql(f"INSERT INTO out_t {TUMBLE}").job
        _wait_until_committed(out, job)
        if parallelism == 1:
            savepoint = job.stop(savepoint=True)
        else:
            result = session.sql(f"STOP JOB '{job.id}' WITH SAVEPOINT")
            savepoint = result.to_arrow().column("savepoint path")[0].as_py()
        assert job.status() == "FINISHED"
        assert session.sql("SHOW JOBS").to_arrow().column("last savepoint").to_pylist() == [
            savepoint]
    finally:
        session.close()
    assert Path(savepoint).parent == tmp_path / "savepoints"
    assert Path(savepoint).name.startswith("savepoint-")
    stopped = committed_rows(out)
    assert 0 < sum(stopped.values()) < sum(_expected_tumble().values()), (
        "the stop did not land inside the input")
    assert not list(out.glob(".*")), "files left in progress"

    copy = _relocated(savepoint, tmp_path)
    session = _session(tmp_path, parallelism, after)
    try:
        session.sql(sink)
        session.sql(f"SET 'execution.savepoint.path' = '{copy}'")
        assert session.sql(f"INSERT INTO out_t {TUMBLE}").job.wait(180) == "FINISHED"
    finally:
        session.close()
    assert committed_rows(out) == _expected_tumble()
    assert not list(out.glob(".*"))


@pytest.mark.parametrize(("before", "after"), [("hashmap", "hashmap"),
                                               ("rocksdb", "hashmap")])
@pytest.mark.parametrize("parallelism", [1, 2])
def test_group_by_changelog_stopped_and_restored_equals_one_run(
        tmp_path: Path, parallelism: int, before: str, after: str) -> None:
    """The changelog is streamed to the client, which keeps the latest row per key as an
    upsert sink does (a streamed result is at-least-once: the changes after the savepoint
    arrive again from the restored run)."""
    rows: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    session = _session(tmp_path, parallelism, before)
    try:
        result = session.sql(GROUP_BY)
        stopped: list[str] = []

        def stop_when_running() -> None:
            deadline = time.monotonic() + 120
            while not rows and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.5)
            stopped.append(result.changelog.run.stop_with_savepoint())

        stopper = threading.Thread(target=stop_when_running)
        stopper.start()
        _upsert(result.stream(), rows)
        stopper.join(60)
        assert stopped, "the stop did not return"
    finally:
        session.close()
    assert rows and rows != _expected_group_by(), "the stop did not land inside the input"

    copy = _relocated(stopped[0], tmp_path)
    session = _session(tmp_path, parallelism, after)
    try:
        session.sql(f"SET 'execution.savepoint.path' = '{copy}'")
        _upsert(session.sql(GROUP_BY).stream(), rows)
    finally:
        session.close()
    assert rows == _expected_group_by()


def _upsert(batches: Any, rows: dict[tuple[Any, ...], tuple[Any, ...]]) -> None:
    for batch in batches:
        ops = batch.column(0).to_pylist()
        values = list(zip(*(batch.column(i).to_pylist() for i in range(1, batch.num_columns))))
        for op, row in zip(ops, values):
            if op in ("+I", "+U"):
                rows[row[:1]] = row
            elif op == "-D":
                rows.pop(row[:1], None)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_stop_with_drain_fires_every_window_and_ends_finished(tmp_path: Path,
                                                               parallelism: int) -> None:
    out = tmp_path / "out"
    session = _session(tmp_path, parallelism, "hashmap")
    try:
        session.sql(f"CREATE TABLE out_t ({TUMBLE_SINK}) WITH ('connector' = 'filesystem', "
                    f"'path' = '{out}', 'format' = 'parquet')")
        job = session.sql(f"INSERT INTO out_t {TUMBLE}").job
        _wait_until_committed(out, job)
        result = session.sql(f"STOP JOB '{job.id}' WITH SAVEPOINT WITH DRAIN")
        savepoint = result.to_arrow().column("savepoint path")[0].as_py()
        assert job.status() == "FINISHED"
    finally:
        session.close()
    assert (Path(savepoint) / "_metadata").is_file()
    rows = committed_rows(out)
    read = sum(row[3] * count for row, count in rows.items())
    assert 0 < read < ROWS, "the drain did not land inside the input"
    if parallelism == 1:
        # the source read v = 1..n before the drain, and the final watermark fired every
        # window of them, the last one partial
        assert rows == _expected_tumble(read)
    else:
        # two source subtasks read their shares: each window fired once, with at most
        # the rows it has in the whole input
        full = {row[:3]: row[3] for row in _expected_tumble()}
        assert max(rows.values()) == 1
        assert all(row[3] <= full[row[:3]] for row in rows)
    assert not list(out.glob(".*"))


def test_without_a_savepoint_directory_the_stop_names_the_setting_and_the_job_runs_on(
        tmp_path: Path) -> None:
    out = tmp_path / "out"
    session = _session(tmp_path, 1, "hashmap")
    try:
        session.sql("RESET 'execution.checkpointing.savepoint-dir'")
        session.sql(f"CREATE TABLE out_t ({TUMBLE_SINK}) WITH ('connector' = 'filesystem', "
                    f"'path' = '{out}', 'format' = 'parquet')")
        job = session.sql(f"INSERT INTO out_t {TUMBLE}").job
        _wait_until_committed(out, job)
        with pytest.raises(ConfigError, match="execution.checkpointing.savepoint-dir"):
            session.sql(f"STOP JOB '{job.id}' WITH SAVEPOINT")
        assert job.status() == "RUNNING"
        # a directory in the statement needs no setting
        result = session.sql(f"STOP JOB '{job.id}' WITH SAVEPOINT '{tmp_path / 'given'}'")
        savepoint = Path(result.to_arrow().column("savepoint path")[0].as_py())
        assert savepoint.parent == tmp_path / "given" and (savepoint / "_metadata").is_file()
        assert job.status() == "FINISHED"
    finally:
        session.close()


def test_a_job_without_checkpointing_cannot_take_a_savepoint(tmp_path: Path) -> None:
    session = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                 "execution.checkpointing.savepoint-dir":
                                     str(tmp_path / "savepoints")})
    try:
        create_sources(session, rows=ROWS, rate=RATE)
        session.sql("CREATE TABLE out_t (v BIGINT) WITH ('connector' = 'blackhole')")
        job = session.sql("INSERT INTO out_t SELECT v FROM src").job
        with pytest.raises(ExecutionError, match="execution.checkpointing.interval"):
            session.sql(f"STOP JOB '{job.id}' WITH SAVEPOINT")
        assert job.status() == "RUNNING"
        session.sql(f"STOP JOB '{job.id}'")
        assert job.status() == "CANCELED"
    finally:
        session.close()


def test_stop_job_of_an_unknown_id_is_an_error() -> None:
    session = flowsql.connect()
    try:
        with pytest.raises(ExecutionError, match="no job '7' in this session"):
            session.sql("STOP JOB '7' WITH SAVEPOINT")
    finally:
        session.close()
