"""Savepoints without a running job: the directory layout, the storage (canonical Arrow
IPC files, paths relative to the savepoint, movable), reading any completed snapshot
directory (``RestoreSource``), the coordinator's savepoint bookkeeping, and a task writing
a savepoint's files where its trigger said."""

from __future__ import annotations

import queue
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint import paths
from flowsql.runtime.checkpoint.alignment import CheckpointingMode
from flowsql.runtime.checkpoint.config import CheckpointSettings
from flowsql.runtime.checkpoint.coordinator import CheckpointCoordinator
from flowsql.runtime.checkpoint.coordinator_state import JobVertex
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, OperatorState, SubtaskState
from flowsql.runtime.checkpoint.savepoint_storage import SavepointStorage
from flowsql.runtime.checkpoint.storage import CheckpointStorage
from flowsql.runtime.checkpoint.task_checkpointer import Acknowledgement, TaskCheckpointer
from flowsql.runtime.checkpoint.task_state import RestoreSource, TaskState, restore_states
from flowsql.runtime.events import BarrierKind, CheckpointBarrier

TABLES = {"keyed/totals": pa.table({"__key_group": pa.array([3, 9], pa.int32()),
                                    "total": pa.array([10, 20], pa.int64())}),
          "list/offsets": pa.table({"offset": pa.array([7], pa.int64())})}


# -- layout ----------------------------------------------------------------------------------

def test_savepoint_names_carry_the_end_of_the_job_id_and_a_random_part() -> None:
    assert paths.savepoint_dir_name("20261125-005134-abcdef123456", "f00d") == (
        "savepoint-123456-f00d")
    assert paths.savepoint_dir_name("a/b", "1") == "savepoint-a%2Fb-1"
    with pytest.raises(ValueError):
        paths.savepoint_dir_name("job", "")


def test_savepoint_state_files_are_relative_to_the_savepoint() -> None:
    assert paths.savepoint_state_file("stage-0/3", 1, "keyed/totals") == (
        "stage-0%2F3/1/keyed%2Ftotals.arrow")
    with pytest.raises(ValueError):
        paths.savepoint_state_file("op", -1, "s")


# -- storage ---------------------------------------------------------------------------------

def _write_savepoint(base: Path, job_id: str = "job-1") -> SavepointStorage:
    storage = SavepointStorage.create(str(base), job_id)
    files = storage.write_state(4, "stage-0/1", 0, TABLES)
    operators = (OperatorState("stage-0/1", 1, 128, (SubtaskState(0, files),)),)
    storage.commit(CheckpointMetadata(job_id, 4, 1000, 1100, operators, "savepoint"))
    return storage


def test_a_savepoint_is_arrow_files_and_metadata_under_its_own_directory(
        tmp_path: Path) -> None:
    storage = _write_savepoint(tmp_path / "savepoints")
    directory = Path(storage.location)
    assert directory.parent == tmp_path / "savepoints"
    assert sorted(str(p.relative_to(directory)) for p in directory.rglob("*")
                  if p.is_file()) == ["_metadata", "stage-0%2F1/0/keyed%2Ftotals.arrow",
                                      "stage-0%2F1/0/list%2Foffsets.arrow"]
    metadata = CheckpointMetadata.from_json((directory / "_metadata").read_bytes())
    assert metadata.kind == "savepoint" and metadata.shared_files == ()
    assert [f.path for f in metadata.operators[0].subtasks[0].files] == [
        "stage-0%2F1/0/keyed%2Ftotals.arrow", "stage-0%2F1/0/list%2Foffsets.arrow"]
    with pa.memory_map(str(directory / "stage-0%2F1/0/keyed%2Ftotals.arrow")) as source:
        assert pa.ipc.open_file(source).read_all().equals(TABLES["keyed/totals"])


def test_a_moved_savepoint_restores_the_same_tables(tmp_path: Path) -> None:
    storage = _write_savepoint(tmp_path / "savepoints")
    moved = tmp_path / "elsewhere" / "kept"
    shutil.move(storage.location, moved)
    restored = restore_states(RestoreSource(str(moved)), ["stage-0/1", "stage-0/2"], 0, 1)
    assert set(restored) == {"stage-0/1"}  # an operator the savepoint lacks starts empty
    assert {name: table.equals(TABLES[name]) for name, table in
            restored["stage-0/1"].items()} == {name: True for name in TABLES}


def test_a_savepoint_commits_once_and_only_savepoint_metadata(tmp_path: Path) -> None:
    storage = _write_savepoint(tmp_path)
    again = CheckpointMetadata("job-1", 4, 1000, 1100, (), "savepoint")
    with pytest.raises(ExecutionError, match="already completed"):
        storage.commit(again)
    other = SavepointStorage.create(str(tmp_path), "job-1")
    with pytest.raises(ExecutionError, match="kind 'savepoint'"):
        other.commit(CheckpointMetadata("job-1", 5, 1000, 1100, (), "checkpoint"))
    with pytest.raises(ExecutionError, match="of job 'job-2'"):
        other.commit(CheckpointMetadata("job-2", 5, 1000, 1100, (), "savepoint"))
    other.discard_all()
    assert not Path(other.location).exists()


def test_a_checkpoint_directory_is_read_from_inside_its_job_directory(tmp_path: Path) -> None:
    storage = CheckpointStorage.from_uri(str(tmp_path / "checkpoints"), "job/1")
    files = storage.write_state(3, "stage-0/0", 0, TABLES)
    storage.commit(CheckpointMetadata("job/1", 3, 1, 2, (
        OperatorState("stage-0/0", 1, 128, (SubtaskState(0, files),)),)))
    source = RestoreSource.checkpoint(str(tmp_path / "checkpoints"), "job/1", 3)
    assert source.directory == f"{tmp_path}/checkpoints/job%2F1/chk-3"
    restored = restore_states(source, ["stage-0/0"], 0, 1)
    assert restored["stage-0/0"]["list/offsets"].equals(TABLES["list/offsets"])
    # the whole job directory moves together
    shutil.move(str(tmp_path / "checkpoints"), tmp_path / "moved")
    moved = RestoreSource(str(tmp_path / "moved" / "job%2F1" / "chk-3"))
    assert restore_states(moved, ["stage-0/0"], 0, 1)["stage-0/0"]["keyed/totals"].equals(
        TABLES["keyed/totals"])


def test_a_directory_without_a_completed_snapshot_is_refused(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ExecutionError, match="is not a completed checkpoint or savepoint"):
        RestoreSource(str(tmp_path / "empty")).open()
    storage = CheckpointStorage.from_uri(str(tmp_path), "job")
    storage.commit(CheckpointMetadata("job", 2, 1, 2, ()))
    (tmp_path / "job" / "chk-7").mkdir()
    shutil.copy(tmp_path / "job" / "chk-2" / "_metadata", tmp_path / "job" / "chk-7")
    with pytest.raises(ExecutionError, match="holds the metadata of checkpoint 2"):
        RestoreSource(str(tmp_path / "job" / "chk-7")).open()


# -- coordinator -----------------------------------------------------------------------------

VERTICES = [JobVertex("stage-0/0", 1, 128)]


def _coordinator(tmp_path: Path, events: list[tuple[Any, ...]]) -> CheckpointCoordinator:
    config = CheckpointSettings.of({"execution.checkpointing.interval": "50 ms",
                                    "execution.checkpointing.dir": str(tmp_path / "ck")})
    assert config is not None
    return CheckpointCoordinator(
        config, CheckpointStorage.from_uri(str(tmp_path / "ck"), "job"), VERTICES,
        trigger=lambda n, ts: events.append(("trigger", n)),
        complete=lambda n: events.append(("complete", n)),
        fail_job=lambda reason: events.append(("fail", reason)),
        final=lambda n: events.append(("final", n)), tasks=1,
        trigger_savepoint=lambda n, ts, directory: events.append(("savepoint", n, directory)),
        end_sources=lambda: events.append(("drain",)),
        final_savepoint=lambda n, directory: events.append(("final", n, directory)))


def _savepoint_ack(directory: str, checkpoint_id: int) -> dict[str, SubtaskState]:
    state = TaskState(CheckpointSettings.of({"execution.checkpointing.interval": "1 s"}),
                      "job", 0)  # type: ignore[arg-type]
    return {"stage-0/0": state.persist(checkpoint_id, "stage-0/0", TABLES, directory)}


def test_a_stop_savepoint_pauses_periodic_checkpoints_and_completes_in_its_directory(
        tmp_path: Path) -> None:
    events: list[tuple[Any, ...]] = []
    coordinator = _coordinator(tmp_path, events)
    coordinator.start()
    try:
        checkpoint_id, location = coordinator.trigger_savepoint(str(tmp_path / "sp"), stop=True)
        assert ("savepoint", checkpoint_id, location) in events
        time.sleep(0.3)
        assert not [e for e in events if e[0] == "trigger" and e[1] > checkpoint_id]
        coordinator.acknowledge(checkpoint_id, _savepoint_ack(location, checkpoint_id))
        assert coordinator.wait_completed(checkpoint_id, 5)
        assert ("complete", checkpoint_id) in events
        assert (Path(location) / "_metadata").is_file()
        assert not (tmp_path / "ck" / "job" / f"chk-{checkpoint_id}").exists()
        summary = coordinator.summary()
        assert summary["last_savepoint"] == location
        assert summary["last_checkpoint"]["kind"] == "savepoint"
        # retention of later checkpoints never touches it
        coordinator.resume_periodic()
        deadline = time.monotonic() + 10
        while not [e for e in events if e[0] == "trigger" and e[1] > checkpoint_id]:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        later = max(e[1] for e in events if e[0] == "trigger")
        coordinator.acknowledge(later, {"stage-0/0": SubtaskState(0)})
        assert (tmp_path / "ck" / "job" / f"chk-{later}" / "_metadata").is_file()
        assert (Path(location) / "_metadata").is_file()
    finally:
        coordinator.stop()


def test_a_declined_savepoint_leaves_no_directory(tmp_path: Path) -> None:
    events: list[tuple[Any, ...]] = []
    coordinator = _coordinator(tmp_path, events)
    checkpoint_id, location = coordinator.trigger_savepoint(str(tmp_path / "sp"), stop=True)
    _savepoint_ack(location, checkpoint_id)  # written, never acknowledged
    coordinator.decline(checkpoint_id, "disk full")
    assert not coordinator.wait_completed(checkpoint_id, 1)
    assert not Path(location).exists()
    coordinator.stop()


def test_a_drained_job_ends_with_a_final_savepoint(tmp_path: Path) -> None:
    events: list[tuple[Any, ...]] = []
    coordinator = _coordinator(tmp_path, events)
    location = coordinator.drain(str(tmp_path / "sp"))
    assert location is not None and events[-1] == ("drain",)
    with pytest.raises(ExecutionError, match="ending already"):
        coordinator.drain(None)
    coordinator.input_ended()
    final = coordinator.final_checkpoint_id
    assert final is not None and events[-1] == ("final", final, location)
    coordinator.acknowledge(final, _savepoint_ack(location, final))
    assert coordinator.wait_final(5)
    assert CheckpointMetadata.from_json(
        (Path(location) / "_metadata").read_bytes()).kind == "savepoint"
    coordinator.stop()


def test_no_savepoint_once_the_input_of_a_task_ended(tmp_path: Path) -> None:
    coordinator = _coordinator(tmp_path, [])
    coordinator.input_ended()
    with pytest.raises(ExecutionError, match="the job is ending"):
        coordinator.trigger_savepoint(str(tmp_path / "sp"), stop=True)
    coordinator.stop()


# -- a task ----------------------------------------------------------------------------------

class _Run:
    def __init__(self) -> None:
        self.barriers: list[CheckpointBarrier] = []
        self.ended = False

    def snapshot(self, checkpoint_id: int) -> dict[str, dict[str, pa.Table]]:
        return {"stage-1/0": TABLES}

    def emit_barrier(self, barrier: CheckpointBarrier) -> None:
        self.barriers.append(barrier)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        pass

    def cancel(self) -> None:
        pass

    def end_sources(self) -> None:
        self.ended = True


@pytest.mark.parametrize("command_first", [True, False])
def test_a_task_without_sources_writes_the_savepoint_where_its_trigger_said(
        tmp_path: Path, command_first: bool) -> None:
    """The trigger (control path) and the barrier (data path) reach a task in either
    order; the snapshot goes to the savepoint's directory whatever the backend."""
    settings = CheckpointSettings.of({"execution.checkpointing.interval": "1 s",
                                      "execution.checkpointing.dir": str(tmp_path / "ck"),
                                      "state.backend.type": "rocksdb",
                                      "execution.checkpointing.incremental": "true",
                                      "state.backend.rocksdb.localdir": str(tmp_path / "db")})
    assert settings is not None
    state = TaskState(settings, "job", 0)
    reports: queue.SimpleQueue[Any] = queue.SimpleQueue()
    checkpointer = TaskCheckpointer(CheckpointingMode.EXACTLY_ONCE, 1, False, state.persist,
                                    reports.put)
    run = _Run()
    location = SavepointStorage.create(str(tmp_path / "sp"), "job").location
    trigger = {"type": "trigger", "checkpoint": 5, "timestamp": 1, "savepoint": location}
    barrier = CheckpointBarrier(5, 1, BarrierKind.SAVEPOINT)
    if command_first:
        checkpointer.commands.put(trigger)
        checkpointer.on_turn(run)
        checkpointer.on_channel_event(run, 0, barrier)
    else:
        checkpointer.on_channel_event(run, 0, barrier)
        threading.Timer(0.2, lambda: (checkpointer.commands.put(trigger),
                                      checkpointer.on_turn(run))).start()
    ack = reports.get(timeout=10)
    assert isinstance(ack, Acknowledgement) and ack.checkpoint_id == 5
    assert run.barriers == [barrier]
    files = ack.states["stage-1/0"].files
    assert [f.path for f in files] == ["stage-1%2F0/0/keyed%2Ftotals.arrow",
                                       "stage-1%2F0/0/list%2Foffsets.arrow"]
    assert all((Path(location) / f.path).is_file() for f in files)
    assert not ack.states["stage-1/0"].shared_files
    assert not (tmp_path / "ck").exists()
    checkpointer.commands.put({"type": "drain"})
    checkpointer.on_turn(run)
    assert run.ended
    checkpointer.close()
    state.close()


def test_no_final_checkpoint_while_a_stop_savepoint_waits(tmp_path: Path) -> None:
    """A final checkpoint completing after the savepoint would commit rows it does not
    cover; if the savepoint fails, the final checkpoint follows."""
    events: list[tuple[Any, ...]] = []
    coordinator = _coordinator(tmp_path, events)
    checkpoint_id, _ = coordinator.trigger_savepoint(str(tmp_path / "sp"), stop=True)
    coordinator.input_ended()  # aborts the savepoint: a task finished
    assert not coordinator.wait_completed(checkpoint_id, 1)
    assert not [e for e in events if e[0] == "final"]
    coordinator.resume_periodic()
    assert events[-1] == ("final", coordinator.final_checkpoint_id)
    coordinator.stop()


def test_a_savepoint_on_s3_restores_from_its_uri(s3_filesystem: Any, s3_endpoint: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _, bucket = s3_filesystem
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")  # the local moto server's
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    query = f"?endpoint_override={s3_endpoint}&scheme=http&region=us-east-1"
    storage = SavepointStorage.create(f"s3://{bucket}/savepoints{query}", "job-1")
    assert storage.location.startswith(f"s3://{bucket}/savepoints/savepoint-")
    assert storage.location.endswith(query)
    files = storage.write_state(4, "stage-0/1", 0, TABLES)
    storage.commit(CheckpointMetadata("job-1", 4, 1000, 1100, (
        OperatorState("stage-0/1", 1, 128, (SubtaskState(0, files),)),), "savepoint"))
    restored = restore_states(RestoreSource(storage.location), ["stage-0/1"], 0, 1)
    assert restored["stage-0/1"]["keyed/totals"].equals(TABLES["keyed/totals"])
