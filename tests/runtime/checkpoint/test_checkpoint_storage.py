"""Real checkpoints through storage, on a local directory and on a local S3 server:
StateStore snapshots -> state files -> _metadata -> latest completed -> restore, also into
another parallelism; commit marker, incomplete checkpoints and retention."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.coordinator_state import (
    AllAcknowledged,
    CheckpointCoordinatorState,
    CheckpointingConfig,
    JobVertex,
    Triggered,
)
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, OperatorState, SubtaskState
from flowsql.runtime.checkpoint.paths import CheckpointDirectory
from flowsql.runtime.checkpoint.storage import CheckpointStorage
from flowsql.runtime.partitioning import key_group_range, key_groups
from flowsql.runtime.state import KEY_GROUP
from flowsql.runtime.state.store import StateStore

MAX_PARALLELISM = 16
KEYED_SCHEMA = pa.schema([("key", pa.string()), ("total", pa.int64())])
SPLIT_SCHEMA = pa.schema([("file", pa.string()), ("offset", pa.int64())])
UNION_SCHEMA = pa.schema([("watermark", pa.int64())])
KEYS = [f"user-{i}" for i in range(40)]


def _register(store: StateStore) -> tuple:
    """Keyed rows, split and union list state and timers, as an operator's open does."""
    return (store.keyed_table("totals", KEYED_SCHEMA),
            store.list_state("splits", SPLIT_SCHEMA, "split"),
            store.list_state("progress", UNION_SCHEMA, "union"),
            store.timers("windows"))


def _store(subtask: int, parallelism: int) -> StateStore:
    """An empty store with the states registered."""
    store = StateStore(subtask, parallelism, MAX_PARALLELISM)
    _register(store)
    return store


def _filled(subtask: int, parallelism: int) -> StateStore:
    """Subtask ``subtask`` of ``parallelism`` holding the keys of its key groups."""
    store = StateStore(subtask, parallelism, MAX_PARALLELISM)
    totals, splits, progress, windows = _register(store)
    keys = pa.array(KEYS)
    groups = totals.key_groups_of([keys], len(KEYS))
    mine = np.isin(groups, list(store.key_groups))
    keys = keys.filter(pa.array(mine))
    groups = groups[mine]
    values = pa.array([int(k.split("-")[1]) * 10 for k in keys.to_pylist()], pa.int64())
    totals.replace(pa.table({KEY_GROUP: pa.array(groups, pa.int32()), "key": keys,
                             "total": values}))
    splits.update(pa.table(
        {"file": [f"part-{subtask}-{i}.csv" for i in range(3)],
         "offset": [100 * subtask + i for i in range(3)]}, schema=SPLIT_SCHEMA))
    progress.update(pa.table({"watermark": [1_000 + subtask]}, schema=UNION_SCHEMA))
    windows.register(groups, np.arange(len(groups)) + 100 * subtask,
                     np.full(len(groups), 5_000 + subtask))
    return store


def _rows(table: pa.Table) -> list[tuple]:
    return sorted(tuple(row.values()) for row in table.to_pylist())


def _content(snapshot: dict[str, pa.Table]) -> dict[str, list[tuple]]:
    return {name: _rows(table) for name, table in snapshot.items()}


def _checkpoint(storage: CheckpointStorage, stores: list[StateStore], now_ms: int,
                coordinator: CheckpointCoordinatorState) -> CheckpointMetadata:
    """One checkpoint as the runtime will take it: trigger, every subtask uploads its
    snapshot and acknowledges, the coordinator commits the metadata, then notifies."""
    triggered = coordinator.trigger(now_ms)
    assert isinstance(triggered, Triggered)
    n = triggered.checkpoint_id
    position = SubtaskState(0, source_position={"file": "events.csv", "offset": 40 * n})
    coordinator.acknowledge(n, "source", position, now_ms + 1)
    outcome = None
    for store in stores:
        files = storage.write_state(n, "agg", store.subtask_index, store.snapshot())
        outcome = coordinator.acknowledge(n, "agg", SubtaskState(store.subtask_index, files),
                                          now_ms + 2)
    assert isinstance(outcome, AllAcknowledged)
    storage.commit(outcome.metadata)
    notice = coordinator.metadata_written(n, now_ms + 3)
    assert notice.checkpoint_id == n
    return outcome.metadata


def _coordinator(parallelism: int) -> CheckpointCoordinatorState:
    return CheckpointCoordinatorState(
        "job/1", CheckpointingConfig(interval_ms=1_000),
        [JobVertex("source", 1, MAX_PARALLELISM), JobVertex("agg", parallelism,
                                                            MAX_PARALLELISM)],
        started_ms=0)


def test_round_trip_restores_keyed_list_and_timer_state(storage):
    original = _filled(0, 1)
    coordinator = _coordinator(1)
    metadata = _checkpoint(storage, [original], 1_000, coordinator)
    # checkpoint 2 crashes after uploading, before its metadata: it must be ignored
    coordinator.trigger(2_000)
    storage.write_state(2, "agg", 0, _store(0, 1).snapshot())
    assert storage.list_checkpoints() == (CheckpointDirectory(1, True),
                                          CheckpointDirectory(2, False))
    latest = storage.latest_completed()
    assert latest == metadata
    assert latest.operator("source").subtasks[0].source_position == \
        {"file": "events.csv", "offset": 40}
    handles = latest.operator("agg").subtasks[0].files
    assert {h.state for h in handles} == {"keyed/totals", "list/splits", "list/progress",
                                          "timers/windows"}
    assert all(h.size_bytes > 0 for h in handles)
    restored = _store(0, 1)
    restored.restore(storage.restore_tables(latest, "agg", 0, 1))
    expected = original.snapshot()
    actual = restored.snapshot()
    assert actual.keys() == expected.keys()
    for name in expected:   # equal rows in equal order, state metadata included
        assert actual[name].equals(expected[name], check_metadata=True), name
    assert _content(actual)["keyed/totals"] == sorted(
        (g, k, int(k.split("-")[1]) * 10) for g, k in zip(
            key_groups([pa.array(KEYS)], MAX_PARALLELISM), KEYS))


def test_two_subtasks_restore_into_one(storage):
    old = [_filled(0, 2), _filled(1, 2)]
    metadata = _checkpoint(storage, old, 1_000, _coordinator(2))
    merged = _store(0, 1)
    merged.restore(storage.restore_tables(storage.latest_completed(), "agg", 0, 1))
    content = _content(merged.snapshot())
    olds = [_content(s.snapshot()) for s in old]
    for name in ("keyed/totals", "timers/windows", "list/splits", "list/progress"):
        assert content[name] == sorted(olds[0][name] + olds[1][name]), name
    assert len(content["keyed/totals"]) == len(KEYS)
    assert metadata.operator("agg").parallelism == 2


def test_one_subtask_restores_into_two(storage):
    old = _filled(0, 1)
    _checkpoint(storage, [old], 1_000, _coordinator(1))
    latest = storage.latest_completed()
    olds = _content(old.snapshot())
    parts = []
    for subtask in range(2):
        store = _store(subtask, 2)
        store.restore(storage.restore_tables(latest, "agg", subtask, 2))
        content = _content(store.snapshot())
        owned = key_group_range(subtask, 2, MAX_PARALLELISM)
        assert content["keyed/totals"] == [r for r in olds["keyed/totals"] if r[0] in owned]
        assert content["timers/windows"] == [r for r in olds["timers/windows"] if r[0] in owned]
        # split list state: entry i goes to subtask i % 2; union state goes everywhere
        assert content["list/splits"] == _rows(old.snapshot()["list/splits"]
                                               .filter(pa.array([i % 2 == subtask
                                                                 for i in range(3)])))
        assert content["list/progress"] == olds["list/progress"]
        parts.append(content)
    assert sorted(parts[0]["keyed/totals"] + parts[1]["keyed/totals"]) == olds["keyed/totals"]
    assert parts[0]["keyed/totals"] and parts[1]["keyed/totals"]


def test_commit_is_written_once_and_leaves_no_temporary_file(storage):
    coordinator = _coordinator(1)
    metadata = _checkpoint(storage, [_filled(0, 1)], 1_000, coordinator)
    with pytest.raises(ExecutionError, match="already completed"):
        storage.commit(metadata)
    selector = pafs.FileSelector(f"{storage.job_path}/chk-1", recursive=True)
    names = sorted(info.path.rsplit("/", 1)[1]
                   for info in storage.filesystem.get_file_info(selector)
                   if info.type == pafs.FileType.File)
    assert names == ["_metadata", "keyed%2Ftotals.arrow", "list%2Fprogress.arrow",
                     "list%2Fsplits.arrow", "timers%2Fwindows.arrow"]
    other_job = CheckpointStorage(storage.filesystem, storage.base_path, "job/2")
    with pytest.raises(ExecutionError, match="cannot complete"):
        other_job.commit(metadata)
    assert other_job.latest_completed() is None


def test_retention_deletes_old_checkpoints_and_unreferenced_shared_files(storage):
    def commit(n: int, shared: tuple[str, ...]) -> None:
        references = tuple(storage.write_shared(name, name.encode()) for name in shared)
        files = storage.write_state(n, "agg", 0, _filled(0, 1).snapshot())
        storage.commit(CheckpointMetadata("job/1", n, n, n, (
            OperatorState("agg", 1, MAX_PARALLELISM,
                          (SubtaskState(0, files, references),)),)))

    commit(1, ("sst-1", "sst-2"))
    commit(2, ("sst-2", "sst-3"))
    storage.write_state(3, "agg", 0, _filled(0, 1).snapshot())      # aborted, no metadata
    commit(4, ("sst-3", "sst-4"))
    storage.write_shared("sst-5", b"uploaded by running checkpoint 5")
    storage.write_state(5, "agg", 0, _filled(0, 1).snapshot())
    plan = storage.apply_retention(num_retained=2, in_progress={5: ("shared/sst-5",)})
    assert (plan.retained, plan.deleted) == ((2, 4), (1, 3))
    assert storage.list_checkpoints() == (CheckpointDirectory(2, True),
                                          CheckpointDirectory(4, True),
                                          CheckpointDirectory(5, False))
    assert _shared(storage) == ["sst-2", "sst-3", "sst-4", "sst-5"]
    plan = storage.apply_retention(num_retained=1)
    assert plan.deleted == (2,)
    assert _shared(storage) == ["sst-3", "sst-4", "sst-5"]
    assert storage.latest_completed().checkpoint_id == 4
    restored = _store(0, 1)
    restored.restore(storage.restore_tables(storage.latest_completed(), "agg", 0, 1))
    assert _content(restored.snapshot()) == _content(_filled(0, 1).snapshot())


def _shared(storage: CheckpointStorage) -> list[str]:
    selector = pafs.FileSelector(f"{storage.job_path}/shared", allow_not_found=True)
    return sorted(info.base_name for info in storage.filesystem.get_file_info(selector))


def test_local_paths_and_file_uris_address_the_same_storage(tmp_path: Path):
    by_path = CheckpointStorage.from_uri(str(tmp_path), "job")
    metadata = _checkpoint(by_path, [_filled(0, 1)], 1_000, CheckpointCoordinatorState(
        "job", CheckpointingConfig(interval_ms=1_000),
        [JobVertex("source", 1, MAX_PARALLELISM), JobVertex("agg", 1, MAX_PARALLELISM)], 0))
    by_uri = CheckpointStorage.from_uri(tmp_path.as_uri(), "job")
    assert by_uri.latest_completed() == metadata
    assert (tmp_path / "job" / "chk-1" / "_metadata").is_file()
    # a metadata file left half written under a temporary name does not complete anything
    (tmp_path / "job" / "chk-2").mkdir()
    (tmp_path / "job" / "chk-2" / "_metadata.inprogress-1").write_text("{")
    assert by_uri.list_checkpoints()[-1] == CheckpointDirectory(2, False)
    assert by_uri.latest_completed().checkpoint_id == 1


def test_s3_uri_with_endpoint_options(s3_endpoint, s3_filesystem):
    _, bucket = s3_filesystem
    uri = (f"s3://test:test@{bucket}/ckpt?endpoint_override={s3_endpoint}&scheme=http"
           "&region=us-east-1")
    storage = CheckpointStorage.from_uri(uri, "job")
    assert storage.filesystem.type_name == "s3"
    assert storage.job_path == f"{bucket}/ckpt/job"
    files = storage.write_state(1, "agg", 0, _filled(0, 1).snapshot())
    storage.commit(CheckpointMetadata("job", 1, 0, 0, (OperatorState(
        "agg", 1, MAX_PARALLELISM, (SubtaskState(0, files),)),)))
    assert storage.latest_completed().checkpoint_id == 1
