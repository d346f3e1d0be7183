"""The filesystem sink with checkpointing on: two-phase commit of part files.

Each test plays the task's calls on ``SinkOperator`` (open, restore_state, process_batch,
snapshot_state, notify_checkpoint_complete, end_input, close) against real files, then
reads the directory back with the filesystem source: the visible rows must be exactly the
rows of the completed checkpoints (or of the whole input once it ended), never fewer and
never twice."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import ExecutionError
from flowsql.planner.catalog import TableEntry
from flowsql.planner.physical_streaming import SinkExec
from flowsql.runtime.connectors.filesystem import scan
from flowsql.runtime.connectors.sinks.pending_files import leftovers, part_prefix
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.sink.connector_sink import SinkOperator
from flowsql.runtime.state.store import merge_snapshots
from tests.runtime.connectors.test_sinks import ROWS, SCHEMA, leaf

CHECKPOINTING = {"execution.checkpointing.interval": "100 ms"}
IDS = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _options(directory: Path, fmt: str = "parquet", **extra: str) -> dict[str, str]:
    return {"connector": "filesystem", "path": str(directory), "format": fmt, **extra}


def _sink(options: dict[str, str], schema: pa.Schema = IDS, job_id: str = "job-a",
          attempt: int = 0, subtask: int = 0, parallelism: int = 1,
          settings: dict[str, str] | None = None) -> SinkOperator:
    node, _ = leaf(schema.empty_table())
    operator = SinkOperator(SinkExec(node, TableEntry("out", schema, options), 0.0))
    operator.open(OperatorContext("sink", dict(CHECKPOINTING if settings is None else settings),
                                  subtask_index=subtask, parallelism=parallelism,
                                  job_id=job_id, attempt=attempt))
    return operator


def _write(operator: SinkOperator, ids: range) -> None:
    batch = pa.record_batch([pa.array(list(ids), pa.int64()),
                             pa.array([f"n{i}" for i in ids], pa.string())], schema=IDS)
    assert list(operator.process_batch(0, batch)) == []


def _visible_ids(options: dict[str, str]) -> list[int]:
    """Every id the filesystem source reads, sorted, duplicates kept."""
    table = TableEntry("out", IDS, options)
    read = pa.Table.from_batches(list(scan(table, IDS.names, [], 1000)), IDS)
    return sorted(read.column("id").to_pylist())


def _in_progress(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.endswith(".inprogress"))


def _committed(directory: Path) -> list[str]:
    return sorted(n for n in os.listdir(directory) if not n.startswith("."))


# the happy path -------------------------------------------------------------------------------

def test_only_rows_of_completed_checkpoints_are_visible(tmp_path: Path) -> None:
    options = _options(tmp_path / "out")
    sink = _sink(options)
    _write(sink, range(0, 3))
    first = sink.snapshot_state(1)
    _write(sink, range(3, 5))
    second = sink.snapshot_state(2)
    _write(sink, range(5, 6))                      # after barrier 2: in no checkpoint
    assert _visible_ids(options) == []
    sink.notify_checkpoint_complete(1)
    assert _visible_ids(options) == [0, 1, 2]
    sink.notify_checkpoint_complete(2)
    assert _visible_ids(options) == [0, 1, 2, 3, 4]
    # the state of a checkpoint lists the files still pending when it was taken
    assert first["list/pending-files"].column("checkpoint_id").to_pylist() == [1]
    assert second["list/pending-files"].column("checkpoint_id").to_pylist() == [1, 2]
    assert second["list/job-ids"].column("job_id").to_pylist() == ["job-a"]
    assert list(sink.end_input(0)) == []
    sink.close()
    assert _visible_ids(options) == list(range(6))
    assert _in_progress(tmp_path / "out") == []
    assert _committed(tmp_path / "out") == [f"part-job-a-0-0-{n}.parquet" for n in range(3)]


def test_a_later_notification_commits_the_skipped_checkpoints(tmp_path: Path) -> None:
    options = _options(tmp_path / "out")
    sink = _sink(options)
    for checkpoint in (1, 2, 3):
        _write(sink, range(10 * checkpoint, 10 * checkpoint + 2))
        sink.snapshot_state(checkpoint)
    sink.notify_checkpoint_complete(2)             # checkpoint 1's notification never came
    assert _visible_ids(options) == [10, 11, 20, 21]
    sink.notify_checkpoint_complete(2)             # a duplicate changes nothing
    assert _visible_ids(options) == [10, 11, 20, 21]
    sink.notify_checkpoint_complete(3)
    assert _visible_ids(options) == [10, 11, 20, 21, 30, 31]
    sink.close()


def test_rolled_files_wait_for_the_next_checkpoint(tmp_path: Path) -> None:
    options = _options(tmp_path / "out", "json", **{"sink.rolling-policy.file-size": "1b"})
    sink = _sink(options)
    _write(sink, range(0, 2))
    _write(sink, range(2, 4))                      # two rolled (closed) files
    assert len(_in_progress(tmp_path / "out")) == 2
    assert _visible_ids(options) == []
    state = sink.snapshot_state(1)
    assert state["list/pending-files"].column("checkpoint_id").to_pylist() == [1, 1]
    sink.notify_checkpoint_complete(1)
    assert _visible_ids(options) == [0, 1, 2, 3]
    sink.close()


def test_an_empty_checkpoint_has_no_pending_files(tmp_path: Path) -> None:
    options = _options(tmp_path / "out")
    sink = _sink(options)
    state = sink.snapshot_state(1)
    assert state["list/pending-files"].num_rows == 0
    sink.notify_checkpoint_complete(1)
    sink.close()
    assert not (tmp_path / "out").exists()         # no rows, no files


# failure and restore --------------------------------------------------------------------------

def test_crash_after_checkpoint_2_then_restore_keeps_rows_exactly_once(tmp_path: Path) -> None:
    directory = tmp_path / "out"
    options = _options(directory)
    failed = _sink(options)
    _write(failed, range(0, 3))
    failed.snapshot_state(1)
    _write(failed, range(3, 5))
    state = failed.snapshot_state(2)
    _write(failed, range(5, 7))                    # open file, in no snapshot
    failed.close()                                 # failure: no notification came
    assert _visible_ids(options) == []
    # the open file is gone, the two pending files are left for the restore
    assert _in_progress(directory) == [".part-job-a-0-0-0.parquet.inprogress",
                                       ".part-job-a-0-0-1.parquet.inprogress"]
    restored = _sink(options, attempt=1)
    restored.restore_state(state)
    assert _visible_ids(options) == [0, 1, 2, 3, 4]
    assert _in_progress(directory) == []
    # the sources replay from checkpoint 2: rows 5 and 6 again, then the rest
    _write(restored, range(5, 8))
    assert _in_progress(directory) == [".part-job-a-1-0-0.parquet.inprogress"]
    restored.end_input(0)
    restored.close()
    assert _visible_ids(options) == list(range(8))
    assert _committed(directory) == ["part-job-a-0-0-0.parquet", "part-job-a-0-0-1.parquet",
                                     "part-job-a-1-0-0.parquet"]


def test_restore_after_a_commit_the_failed_run_already_made(tmp_path: Path) -> None:
    options = _options(tmp_path / "out")
    failed = _sink(options)
    _write(failed, range(0, 2))
    state = failed.snapshot_state(1)
    failed.notify_checkpoint_complete(1)           # committed, then the job failed
    failed.close()
    restored = _sink(options, attempt=1)
    restored.restore_state(state)                  # in-progress gone, final present: done
    restored.end_input(0)
    restored.close()
    assert _visible_ids(options) == [0, 1]


def test_restore_from_checkpoint_1_removes_the_files_of_checkpoint_2(tmp_path: Path) -> None:
    directory = tmp_path / "out"
    options = _options(directory, "csv")
    failed = _sink(options)
    _write(failed, range(0, 2))
    state_1 = failed.snapshot_state(1)
    _write(failed, range(2, 4))
    failed.snapshot_state(2)                       # checkpoint 2 never completes
    failed.close()
    restored = _sink(options, attempt=1)
    restored.restore_state(state_1)
    assert _visible_ids(options) == [0, 1]
    assert _in_progress(directory) == []           # checkpoint 2's file: rows 2, 3
    _write(restored, range(2, 4))                  # replayed from checkpoint 1
    restored.end_input(0)
    restored.close()
    assert _visible_ids(options) == [0, 1, 2, 3]


def test_a_second_failure_before_any_new_checkpoint(tmp_path: Path) -> None:
    directory = tmp_path / "out"
    options = _options(directory)
    first = _sink(options)
    _write(first, range(0, 2))
    state = first.snapshot_state(1)
    first.close()
    second = _sink(options, attempt=1)
    second.restore_state(state)
    _write(second, range(2, 4))
    second.snapshot_state(2)                       # pending, checkpoint 2 fails
    second.close()
    third = _sink(options, attempt=2)
    third.restore_state(state)                     # checkpoint 1 again
    assert _in_progress(directory) == []           # attempt 1's file is gone
    _write(third, range(2, 5))
    third.end_input(0)
    third.close()
    assert _visible_ids(options) == [0, 1, 2, 3, 4]


def test_every_subtask_commits_the_union_state_once(tmp_path: Path) -> None:
    """Two subtasks snapshot; the restored job has three, and each restore sees every
    pending file (union state): the first rename wins, the others find it committed."""
    directory = tmp_path / "out"
    options = _options(directory)
    old = [_sink(options, subtask=i, parallelism=2) for i in range(2)]
    _write(old[0], range(0, 2))
    _write(old[1], range(10, 12))
    merged = merge_snapshots([s.snapshot_state(4) for s in old])
    _write(old[1], range(12, 13))
    for sink in old:
        sink.close()
    new = [_sink(options, attempt=1, subtask=i, parallelism=3) for i in range(3)]
    new[2].restore_state(merged)
    _write(new[2], range(12, 13))                  # runs ahead of the other restores
    for sink in new[:2]:
        sink.restore_state(merged)
    assert _visible_ids(options) == [0, 1, 10, 11]
    # only the current attempt's open file is in progress
    assert _in_progress(directory) == [".part-job-a-1-2-0.parquet.inprogress"]
    for sink in new:
        sink.end_input(0)
        sink.close()
    assert _visible_ids(options) == [0, 1, 10, 11, 12]


def test_a_job_restored_from_another_jobs_state_removes_that_jobs_leftovers(
        tmp_path: Path) -> None:
    directory = tmp_path / "out"
    options = _options(directory)
    original = _sink(options, job_id="job-a", attempt=3)
    _write(original, range(0, 2))
    savepoint = original.snapshot_state(7)
    _write(original, range(2, 3))
    original.snapshot_state(8)                     # pending, never completes
    original.close()
    other_job = directory / ".part-job-z-0-0-0.parquet.inprogress"
    other_job.write_bytes(b"not ours")             # a job the state never saw
    successor = _sink(options, job_id="job-b")
    successor.restore_state(savepoint)
    assert _visible_ids(options) == [0, 1]
    assert _in_progress(directory) == [other_job.name]
    _write(successor, range(2, 4))
    state = successor.snapshot_state(1)
    assert sorted(state["list/job-ids"].column("job_id").to_pylist()) == ["job-a", "job-b"]
    successor.close()
    # a leftover of job-a after job-b's first restore is still recognised as garbage
    (directory / ".part-job-a-9-0-0.parquet.inprogress").write_bytes(b"late")
    again = _sink(options, job_id="job-b", attempt=1)
    again.restore_state(state)
    assert _in_progress(directory) == [other_job.name]
    again.end_input(0)
    again.close()
    assert _visible_ids(options) == [0, 1, 2, 3]


def test_a_restart_without_state_leaves_hidden_files_until_a_restore(tmp_path: Path
                                                                    ) -> None:
    directory = tmp_path / "out"
    options = _options(directory)
    failed = _sink(options)
    _write(failed, range(0, 2))
    failed.snapshot_state(1)                       # checkpoint 1 never completes
    failed.close()
    rerun = _sink(options, attempt=1)              # nothing to restore: replay all
    _write(rerun, range(0, 3))
    state = rerun.snapshot_state(1)
    rerun.close()
    # hidden from readers, and another subtask might still restore it: left alone
    assert _in_progress(directory) == [".part-job-a-0-0-0.parquet.inprogress",
                                       ".part-job-a-1-0-0.parquet.inprogress"]
    assert _visible_ids(options) == []
    last = _sink(options, attempt=2)
    last.restore_state(state)
    assert _in_progress(directory) == []           # attempt 0's file went with the restore
    last.end_input(0)
    last.close()
    assert _visible_ids(options) == [0, 1, 2]


def test_a_lost_pending_file_is_an_error(tmp_path: Path) -> None:
    directory = tmp_path / "out"
    options = _options(directory)
    failed = _sink(options)
    _write(failed, range(0, 2))
    state = failed.snapshot_state(1)
    failed.close()
    [name] = _in_progress(directory)
    (directory / name).unlink()
    with pytest.raises(ExecutionError, match="of a completed checkpoint is gone"):
        _sink(options, attempt=1).restore_state(state)


def test_a_second_job_with_the_same_id_never_overwrites_files(tmp_path: Path) -> None:
    options = _options(tmp_path / "out")
    first = _sink(options)
    _write(first, range(0, 2))
    first.end_input(0)
    first.close()
    second = _sink(options)
    with pytest.raises(ExecutionError, match="another job with the same job id"):
        _write(second, range(5, 6))
    second.close()
    assert _visible_ids(options) == [0, 1]


def test_close_after_finish_and_a_late_notification_change_nothing(tmp_path: Path) -> None:
    options = _options(tmp_path / "out")
    sink = _sink(options)
    _write(sink, range(0, 2))
    sink.snapshot_state(1)
    _write(sink, range(2, 3))
    sink.end_input(0)                              # commits checkpoint 1's file and the rest
    assert _visible_ids(options) == [0, 1, 2]
    assert sink.snapshot_state(2)["list/pending-files"].num_rows == 0
    sink.close()
    sink.close()
    sink.notify_checkpoint_complete(1)
    assert _visible_ids(options) == [0, 1, 2]
    assert _in_progress(tmp_path / "out") == []


# formats --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_every_format_reads_back_after_checkpoints_and_a_restore(tmp_path: Path, fmt: str
                                                                 ) -> None:
    directory = tmp_path / "out"
    options = _options(directory, fmt, **{"csv.null-literal": "null"})
    many = [dict(r, id=r["id"] + 10 * k) for k in range(3) for r in ROWS]   # 12 rows
    batches = pa.Table.from_pylist(many, SCHEMA).to_batches(max_chunksize=4)
    failed = _sink(options, SCHEMA)
    failed.process_batch(0, batches[0])
    state = failed.snapshot_state(1)
    failed.process_batch(0, batches[1])            # lost with the failure, replayed
    failed.close()
    restored = _sink(options, SCHEMA, attempt=1)
    restored.restore_state(state)
    restored.process_batch(0, batches[1])
    restored.snapshot_state(2)
    restored.notify_checkpoint_complete(2)
    restored.process_batch(0, batches[2])
    restored.end_input(0)
    restored.close()
    read = pa.Table.from_batches(list(scan(TableEntry("out", SCHEMA, options), SCHEMA.names,
                                           [], 100)), SCHEMA)
    assert sorted(read.to_pylist(), key=lambda r: r["id"]) == many
    assert len(_committed(directory)) == 3 and _in_progress(directory) == []


# checkpointing off ----------------------------------------------------------------------------

def test_without_checkpointing_the_hooks_keep_no_state(tmp_path: Path) -> None:
    options = _options(tmp_path / "out", **{"sink.rolling-policy.file-size": "1b"})
    sink = _sink(options, settings={})
    _write(sink, range(0, 2))                      # rolled: visible at once
    assert _visible_ids(options) == [0, 1]
    assert sink.snapshot_state(1) == {}
    sink.notify_checkpoint_complete(1)
    _write(sink, range(2, 3))
    sink.close()                                   # even without finish, as before
    assert _visible_ids(options) == [0, 1, 2]
    names = _committed(tmp_path / "out")
    assert len(names) == 2 and not any(n.startswith("part-job-a") for n in names)


# names ----------------------------------------------------------------------------------------

def test_part_prefix_makes_the_job_id_file_safe() -> None:
    assert part_prefix("job-a", 2, 5) == "part-job-a-2-5"
    assert part_prefix("a/b.c", 0, 0) == "part-a%2Fb%2Ec-0-0"


def test_leftovers_are_earlier_attempts_of_known_jobs_only() -> None:
    names = [
        ".part-j-1-2-0-3-7.parquet.inprogress",    # job 'j-1-2', attempt 0: earlier
        ".part-j-1-2-1-0-0.csv.inprogress",        # job 'j-1-2', attempt 1: current
        ".part-j-1-2-2-0-0.csv.inprogress",        # a later attempt: never ours to delete
        ".part-old-5-1-0.json.inprogress",         # job 'old', any attempt
        ".part-other-0-0-0.json.inprogress",       # a job the state never saw
        "part-j-1-2-0-3-8.parquet",                # committed
        ".part-j-1-2-0-3-9.parquet",               # not in progress
        ".part-a%2Fb-0-0-0.csv.inprogress",        # job 'a/b' (file-safe)
        ".part-%ZZ-0-0-0.csv.inprogress",          # not a name the sink writes
    ]
    assert leftovers(names, ["j-1-2", "old", "a/b"], "j-1-2", 1) == [
        ".part-a%2Fb-0-0-0.csv.inprogress", ".part-j-1-2-0-3-7.parquet.inprogress",
        ".part-old-5-1-0.json.inprogress"]


# end to end -----------------------------------------------------------------------------------

def test_a_bounded_checkpointed_insert_leaves_every_row_committed(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("".join(f"k{i % 3},{i}\n" for i in range(50)))
    out = tmp_path / "out"
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    try:
        session.sql("SET 'execution.checkpointing.interval' = '100 ms'")
        session.sql(f"""CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem',
                        'path' = '{source}', 'format' = 'csv')""")
        session.sql(f"""CREATE TABLE dst (k STRING, v BIGINT) WITH ('connector' = 'filesystem',
                        'path' = '{out}', 'format' = 'json')""")
        assert session.sql("INSERT INTO dst SELECT k, v * 2 FROM src WHERE v % 5 <> 0"
                           ).job.wait(60) == "FINISHED"
        rows: list[dict[str, Any]] = session.sql("SELECT k, v FROM dst").to_arrow().to_pylist()
    finally:
        session.close()
    assert sorted((r["k"], r["v"]) for r in rows) == sorted(
        (f"k{i % 3}", 2 * i) for i in range(50) if i % 5)
    assert _in_progress(out) == []
    # named as checkpointed files are: part-<job>-<attempt 0>-<subtask>-<n>.json
    assert _committed(out) and all(re.fullmatch(r"part-.+-0-[0-9]+-[0-9]+\.json", n)
                                   for n in _committed(out))
