"""Snapshots through the hashmap and rocksdb backends (real files, a real RocksDB; also on a
local S3 server): round trips, successive checkpoints, incremental uploads, retention of
shared files, rescaled restores."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from flowsql.errors import ConfigError, ExecutionError
from flowsql.runtime.checkpoint.backends import restore_tables, snapshot_backend
from flowsql.runtime.checkpoint.backends.backend import SnapshotBackend
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, OperatorState, SubtaskState
from flowsql.runtime.checkpoint.storage import CheckpointStorage
from flowsql.runtime.partitioning import key_group_range
from flowsql.runtime.state import KEY_GROUP, KeyedTableState
from flowsql.runtime.state.store import StateStore

KEYED_SCHEMA = pa.schema([("key", pa.string()), ("total", pa.int64())])
SPLIT_SCHEMA = pa.schema([("file", pa.string()), ("offset", pa.int64())])
UNION_SCHEMA = pa.schema([("watermark", pa.int64())])
#: (state.backend.type, incremental)
BACKENDS = [("hashmap", False), ("rocksdb", False), ("rocksdb", True)]
BACKEND_IDS = ["hashmap", "rocksdb-full", "rocksdb-incremental"]


@pytest.fixture
def local_storage(tmp_path: Path) -> CheckpointStorage:
    return CheckpointStorage.from_uri(str(tmp_path / "checkpoints"), "job/1")


@pytest.fixture
def local_dir(tmp_path: Path) -> str:
    return str(tmp_path / "rocksdb")


def _register(store: StateStore) -> tuple:
    return (store.keyed_table("totals", KEYED_SCHEMA),
            store.list_state("splits", SPLIT_SCHEMA, "split"),
            store.list_state("progress", UNION_SCHEMA, "union"),
            store.timers("windows"))


def _store(subtask: int, parallelism: int, max_parallelism: int) -> StateStore:
    store = StateStore(subtask, parallelism, max_parallelism)
    _register(store)
    return store


def _filled(subtask: int, parallelism: int, max_parallelism: int, num_keys: int,
            version: int = 0) -> StateStore:
    return _filled_with_totals(subtask, parallelism, max_parallelism, num_keys, version)[0]


def _filled_with_totals(subtask: int, parallelism: int, max_parallelism: int, num_keys: int,
                        version: int = 0) -> tuple[StateStore, KeyedTableState]:
    """The keys ``user-0 .. user-<num_keys - 1>`` of the subtask's key groups, each with a
    total of ``10 * i + version``, a timer at ``5000 - i`` (so timers are not in key-group
    order), three split entries and one union entry; and the keyed state."""
    store = StateStore(subtask, parallelism, max_parallelism)
    totals, splits, progress, windows = _register(store)
    keys = pa.array([f"user-{i}" for i in range(num_keys)])
    groups = totals.key_groups_of([keys], num_keys)
    mine = np.isin(groups, list(store.key_groups))
    index = np.arange(num_keys)[mine]
    totals.replace(pa.table({KEY_GROUP: pa.array(groups[mine], pa.int32()),
                             "key": keys.filter(pa.array(mine)),
                             "total": pa.array(index * 10 + version, pa.int64())}))
    splits.update(pa.table({"file": [f"part-{subtask}-{i}.csv" for i in range(3)],
                            "offset": [100 * subtask + i + version for i in range(3)]},
                           schema=SPLIT_SCHEMA))
    progress.update(pa.table({"watermark": [1_000 + subtask + version]}, schema=UNION_SCHEMA))
    windows.register(groups[mine], index, 5_000 - index)
    return store, totals


def _commit(storage: CheckpointStorage, checkpoint_id: int, max_parallelism: int,
            states: list[SubtaskState]) -> CheckpointMetadata:
    metadata = CheckpointMetadata("job/1", checkpoint_id, checkpoint_id, checkpoint_id, (
        OperatorState("agg", len(states), max_parallelism, tuple(states)),))
    storage.commit(metadata)
    return metadata


def _by_key_group(table: pa.Table) -> pa.Table:
    """``table`` with its rows in key-group order (stable): how a rocksdb snapshot reads
    back."""
    order = np.argsort(table.column(KEY_GROUP).to_numpy(), kind="stable")
    return table.take(pa.array(order))


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    """The rows of ``table`` in a canonical order."""
    return sorted((tuple(row.values()) for row in table.to_pylist()), key=repr)


def _assert_tables_equal(actual: dict[str, pa.Table], expected: dict[str, pa.Table],
                         kind: str) -> None:
    """Equal schemas (state metadata included) and rows; rocksdb gives keyed state and
    timers back in key-group order (a snapshot holds them in no particular order), list
    state in its written order."""
    assert actual.keys() == expected.keys()
    for name, table in expected.items():
        if kind.startswith("rocksdb") and name.startswith(("timers/", "keyed/")):
            table = _by_key_group(table)
        assert actual[name].equals(table, check_metadata=True), name


def _restored(storage: CheckpointStorage, metadata: CheckpointMetadata, subtask: int,
              parallelism: int, max_parallelism: int, local_dir: str) -> StateStore:
    store = _store(subtask, parallelism, max_parallelism)
    store.restore(restore_tables(storage, metadata, "agg", subtask, parallelism,
                                 local_dir=local_dir))
    return store


def _shared(storage: CheckpointStorage) -> set[str]:
    selector = pafs.FileSelector(f"{storage.job_path}/shared", allow_not_found=True)
    return {f"shared/{info.base_name}" for info in storage.filesystem.get_file_info(selector)}


@pytest.mark.parametrize(("kind", "incremental"), BACKENDS, ids=BACKEND_IDS)
def test_round_trip_of_keyed_list_and_timer_state(storage, local_dir, kind, incremental):
    original = _filled(0, 1, 16, 40)
    backend = snapshot_backend(kind, storage, "agg", 0, incremental=incremental,
                               local_dir=local_dir)
    try:
        written = original.snapshot()
        metadata = _commit(storage, 1, 16, [backend.write(1, written)])
    finally:
        backend.close()
    metadata = storage.latest_completed()
    tables = restore_tables(storage, metadata, "agg", 0, 1, local_dir=local_dir)
    _assert_tables_equal(tables, written, kind)
    assert tables["keyed/totals"].num_rows == 40
    assert tables["timers/windows"].num_rows == 40
    # restored into a store, every state holds the original rows (the order is the
    # store's: timers re-sorted by the service, keyed rows as the backend read them)
    restored = _restored(storage, metadata, 0, 1, 16, local_dir).snapshot()
    assert restored.keys() == written.keys()
    for name, table in written.items():
        assert restored[name].schema.equals(table.schema, check_metadata=True), name
        assert _rows(restored[name]) == _rows(table), name
    # the instance and the restore downloads are deleted; hashmap needs no local files
    if kind == "rocksdb":
        assert os.listdir(os.path.join(local_dir, "job%2F1", "agg")) == []
    else:
        assert not os.path.exists(local_dir)


@pytest.mark.parametrize(("kind", "incremental"), BACKENDS, ids=BACKEND_IDS)
def test_empty_states_round_trip_with_their_schemas(local_storage, local_dir, kind,
                                                    incremental):
    empty = _store(0, 1, 128)
    backend = snapshot_backend(kind, local_storage, "agg", 0, incremental=incremental,
                               local_dir=local_dir)
    try:
        state = backend.write(1, empty.snapshot())
    finally:
        backend.close()
    metadata = _commit(local_storage, 1, 128, [state])
    tables = restore_tables(local_storage, metadata, "agg", 0, 1, local_dir=local_dir)
    _assert_tables_equal(tables, empty.snapshot(), kind)
    assert all(t.num_rows == 0 for t in tables.values())
    # a subtask without any state
    backend = snapshot_backend(kind, local_storage, "agg", 0, incremental=incremental,
                               local_dir=local_dir)
    try:
        metadata = _commit(local_storage, 2, 128, [backend.write(2, {})])
    finally:
        backend.close()
    assert restore_tables(local_storage, metadata, "agg", 0, 1, local_dir=local_dir) == {}


@pytest.mark.parametrize(("kind", "incremental"), BACKENDS, ids=BACKEND_IDS)
def test_many_key_groups(local_storage, local_dir, kind, incremental):
    original = _filled(0, 1, 4096, 20_000)
    written = original.snapshot()
    assert len(np.unique(written["keyed/totals"].column(KEY_GROUP).to_numpy())) > 3_900
    backend = snapshot_backend(kind, local_storage, "agg", 0, incremental=incremental,
                               local_dir=local_dir)
    try:
        metadata = _commit(local_storage, 1, 4096, [backend.write(1, written)])
    finally:
        backend.close()
    tables = restore_tables(local_storage, metadata, "agg", 0, 1, local_dir=local_dir)
    _assert_tables_equal(tables, written, kind)


@pytest.mark.parametrize(("kind", "incremental"), BACKENDS, ids=BACKEND_IDS)
def test_each_checkpoint_restores_its_own_content(local_storage, local_dir, kind,
                                                  incremental):
    """Successive writes of one backend: changed, removed and added rows, a dropped state
    and a state that became empty each show in exactly the checkpoint they belong to."""
    first = _filled(0, 1, 16, 40).snapshot()
    second = _filled(0, 1, 16, 40).snapshot()
    totals = second["keyed/totals"]
    groups = totals.column(KEY_GROUP).to_numpy()
    keep = groups != groups[0]                       # one key group emptied
    changed = np.where(groups == groups[-1], 1, 0)   # another changed
    second["keyed/totals"] = totals.filter(pa.array(keep)).set_column(
        2, "total", pa.array((totals.column("total").to_numpy() + changed)[keep]))
    del second["list/splits"]                        # state dropped
    second["list/progress"] = second["list/progress"].slice(0, 0)     # state emptied
    third = _filled(0, 1, 16, 60, version=7).snapshot()    # new keys everywhere
    backend = snapshot_backend(kind, local_storage, "agg", 0, incremental=incremental,
                               local_dir=local_dir)
    try:
        checkpoints = {n: _commit(local_storage, n, 16, [backend.write(n, tables)])
                       for n, tables in ((1, first), (2, second), (3, third))}
    finally:
        backend.close()
    for n, written in ((1, first), (2, second), (3, third)):
        tables = restore_tables(local_storage, checkpoints[n], "agg", 0, 1,
                                local_dir=local_dir)
        _assert_tables_equal(tables, written, kind)


def test_rocksdb_full_snapshots_are_private_files(local_storage, local_dir):
    backend = snapshot_backend("rocksdb", local_storage, "agg", 0, local_dir=local_dir)
    try:
        state = backend.write(1, _filled(0, 1, 16, 40).snapshot())
    finally:
        backend.close()
    assert state.shared_files == ()
    assert state.source_position is None
    names = {f.state.removeprefix("rocksdb/") for f in state.files}
    assert all(f.state.startswith("rocksdb/") for f in state.files)
    assert "CURRENT" in names
    assert any(n.startswith("MANIFEST-") for n in names)
    assert any(n.endswith(".sst") for n in names)
    for handle in state.files:
        assert handle.path.startswith("chk-1/agg/0/")
        info = local_storage.filesystem.get_file_info(f"{local_storage.job_path}/{handle.path}")
        assert info.size == handle.size_bytes
    assert _shared(local_storage) == set()


def test_incremental_checkpoint_uploads_only_new_sst_files(local_storage, local_dir):
    """Changing three of 128 key groups: the second checkpoint uploads one small SST file
    and references the first checkpoint's."""
    store, totals = _filled_with_totals(0, 1, 128, 20_000)
    backend = snapshot_backend("rocksdb", local_storage, "agg", 0, incremental=True,
                               local_dir=local_dir)
    try:
        first = backend.write(1, store.snapshot())
        sizes = {p: local_storage.filesystem.get_file_info(f"{local_storage.job_path}/{p}").size
                 for p in first.shared_files}
        assert first.shared_files and _shared(local_storage) == set(first.shared_files)
        rows = totals.rows
        changed = np.isin(rows.column(KEY_GROUP).to_numpy(), [3, 64, 127])
        totals.replace(rows.set_column(2, "total", pa.array(
            np.where(changed, -1, rows.column("total").to_numpy()))))
        second = backend.write(2, store.snapshot())
    finally:
        backend.close()
    new = set(second.shared_files) - set(first.shared_files)
    assert set(first.shared_files) <= set(second.shared_files)
    assert len(new) == 1
    assert _shared(local_storage) == set(second.shared_files)
    new_size = local_storage.filesystem.get_file_info(
        f"{local_storage.job_path}/{new.pop()}").size
    assert new_size * 10 < sum(sizes.values())
    assert not any(f.path.endswith("%2Esst") for f in second.files)
    metadata = _commit(local_storage, 2, 128, [second])
    tables = restore_tables(local_storage, metadata, "agg", 0, 1, local_dir=local_dir)
    _assert_tables_equal(tables, store.snapshot(), "rocksdb")
    assert (tables["keyed/totals"].column("total").to_numpy() == -1).sum() == changed.sum()


def test_retention_keeps_exactly_the_shared_files_retained_checkpoints_use(storage,
                                                                         local_dir):
    """Checkpoints of an incremental backend, each committed and followed by retention
    with one retained checkpoint, until RocksDB compacted files away: the shared directory
    always holds exactly the newest checkpoint's files, and it restores."""
    store, totals = _filled_with_totals(0, 1, 128, 5_000)
    backend = snapshot_backend("rocksdb", storage, "agg", 0, incremental=True,
                               local_dir=local_dir)
    uploaded: set[str] = set()
    deleted: set[str] = set()
    try:
        for n in range(1, 31):
            rows = totals.rows
            changed = rows.column(KEY_GROUP).to_numpy() == (7 * n) % 128
            totals.replace(rows.set_column(2, "total", pa.array(
                rows.column("total").to_numpy() + changed)))
            state = backend.write(n, store.snapshot())
            uploaded |= set(state.shared_files)
            metadata = _commit(storage, n, 128, [state])
            plan = storage.apply_retention(num_retained=1)
            assert plan.retained == (n,)
            assert _shared(storage) == set(state.shared_files)
            deleted = uploaded - set(state.shared_files)
            if deleted and n >= 6:
                break
    finally:
        backend.close()
    assert deleted, "RocksDB never compacted a file away"
    assert [d.checkpoint_id for d in storage.list_checkpoints()] == [n]
    tables = restore_tables(storage, metadata, "agg", 0, 1, local_dir=local_dir)
    _assert_tables_equal(tables, store.snapshot(), "rocksdb")


def _write_parallel(storage: CheckpointStorage, stores: list[StateStore], kinds: list[str],
                    local_dir: str) -> CheckpointMetadata:
    states = []
    for store, kind in zip(stores, kinds):
        backend: SnapshotBackend = snapshot_backend(kind, storage, "agg", store.subtask_index,
                                                    incremental=True, local_dir=local_dir)
        try:
            states.append(backend.write(1, store.snapshot()))
        finally:
            backend.close()
    return _commit(storage, 1, stores[0].max_parallelism, states)


def _content(store: StateStore) -> dict[str, list[tuple]]:
    return {name: sorted(tuple(row.values()) for row in table.to_pylist())
            for name, table in store.snapshot().items()}


@pytest.mark.parametrize("kinds", [["rocksdb", "rocksdb"], ["hashmap", "rocksdb"]],
                         ids=["rocksdb", "mixed"])
def test_two_subtasks_restore_into_one(local_storage, local_dir, kinds):
    old = [_filled(0, 2, 16, 40), _filled(1, 2, 16, 40)]
    metadata = _write_parallel(local_storage, old, kinds, local_dir)
    merged = _restored(local_storage, metadata, 0, 1, 16, local_dir)
    content = _content(merged)
    olds = [_content(s) for s in old]
    for name in ("keyed/totals", "timers/windows", "list/splits", "list/progress"):
        assert content[name] == sorted(olds[0][name] + olds[1][name]), name
    assert content == _content(_filled(0, 1, 16, 40)) | {
        "list/splits": content["list/splits"], "list/progress": content["list/progress"]}
    assert len(content["keyed/totals"]) == 40


def test_one_subtask_restores_into_two(local_storage, local_dir):
    old = _filled(0, 1, 16, 40)
    metadata = _write_parallel(local_storage, [old], ["rocksdb"], local_dir)
    olds = _content(old)
    parts = []
    for subtask in range(2):
        content = _content(_restored(local_storage, metadata, subtask, 2, 16, local_dir))
        owned = key_group_range(subtask, 2, 16)
        assert content["keyed/totals"] == [r for r in olds["keyed/totals"] if r[0] in owned]
        assert content["timers/windows"] == [r for r in olds["timers/windows"]
                                             if r[0] in owned]
        assert content["list/splits"] == sorted(
            tuple(r.values()) for i, r in enumerate(
                old.snapshot()["list/splits"].to_pylist()) if i % 2 == subtask)
        assert content["list/progress"] == olds["list/progress"]
        parts.append(content)
    assert parts[0]["keyed/totals"] and parts[1]["keyed/totals"]
    assert sorted(parts[0]["keyed/totals"] + parts[1]["keyed/totals"]) == olds["keyed/totals"]


def test_rocksdb_instance_lives_under_the_local_dir_until_closed(local_storage, local_dir):
    backend = snapshot_backend("rocksdb", local_storage, "op/x", 3, local_dir=local_dir)
    parent = Path(local_dir) / "job%2F1" / "op%2Fx"
    (instance,) = parent.iterdir()
    assert instance.name.startswith("3-")
    backend.write(1, _filled(0, 1, 16, 10).snapshot())
    assert sorted(p.name for p in instance.iterdir()) == ["db"]    # the checkpoint is gone
    backend.close()
    backend.close()
    assert not instance.exists()
    with pytest.raises(ExecutionError, match="closed"):
        backend.write(2, {})


def test_unknown_backend_is_a_configuration_error(local_storage):
    with pytest.raises(ConfigError, match="unknown state backend 'memory'"):
        snapshot_backend("memory", local_storage, "agg", 0)


def test_restore_refuses_file_names_that_leave_the_download_directory(local_storage,
                                                                      local_dir):
    backend = snapshot_backend("rocksdb", local_storage, "agg", 0, incremental=True,
                               local_dir=local_dir)
    try:
        state = backend.write(1, _filled(0, 1, 16, 10).snapshot())
    finally:
        backend.close()
    escaping = dataclasses.replace(state, files=(
        *state.files, dataclasses.replace(state.files[0], state="rocksdb/../CURRENT")))
    metadata = _commit(local_storage, 1, 16, [escaping])
    with pytest.raises(ExecutionError, match="not a plain file name"):
        restore_tables(local_storage, metadata, "agg", 0, 1, local_dir=local_dir)
    foreign = dataclasses.replace(state, shared_files=(*state.shared_files, "shared/x.sst"))
    metadata = _commit(local_storage, 2, 16, [foreign])
    with pytest.raises(ExecutionError, match="not an SST file"):
        restore_tables(local_storage, metadata, "agg", 0, 1, local_dir=local_dir)
    assert os.listdir(os.path.join(local_dir, "job%2F1", "agg")) == []
