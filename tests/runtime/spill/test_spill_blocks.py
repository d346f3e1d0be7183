"""The spilling building blocks: runs round-trip exactly, partitions split by key, spaces
clean up, budgets answer try_reserve."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from flowsql.errors import ConfigError
from flowsql.planner.config.units import parse_memory_budget, physical_memory_bytes
from flowsql.runtime.operator import MemoryBudget
from flowsql.runtime.spill import (
    SpillSpace,
    partition_by_hash,
    partition_indices,
    spill_batches,
)
from flowsql.runtime.spill.spill_space import parse_tmp_dirs


def _batch(n: int, offset: int = 0) -> pa.RecordBatch:
    return pa.record_batch({"k": pa.array([(i + offset) % 7 for i in range(n)], pa.int64()),
                            "s": pa.array([f"row{i + offset}" if i % 5 else None
                                           for i in range(n)], pa.string())})


def test_run_round_trips_batches_and_counts_metrics(tmp_path: object) -> None:
    space = SpillSpace([str(tmp_path)])
    metrics: dict[str, int] = {}
    batches = [_batch(10), _batch(0), _batch(3, 10)]
    run = spill_batches(space, batches[0].schema, batches, "sort", metrics)
    assert run.rows == 13
    assert pa.Table.from_batches(list(run.read())).equals(
        pa.Table.from_batches([batches[0], batches[2]]))
    assert run.read_table().to_pylist() == pa.Table.from_batches(batches).to_pylist()
    assert metrics == {"spilled_bytes": run.file_bytes, "spilled_runs": 1}
    assert space.bytes_written == run.file_bytes > 0
    run.delete()
    assert not os.path.exists(run.path)
    run.delete()  # idempotent


def test_space_cleanup_removes_every_directory(tmp_path: object) -> None:
    roots = [os.path.join(str(tmp_path), name) for name in ("a", "b")]
    for root in roots:
        os.makedirs(root)
    space = SpillSpace(roots)
    paths = [space.new_path("hash join") for _ in range(4)]
    assert {os.path.dirname(os.path.dirname(p)) for p in paths} == set(roots)
    for path in paths:
        open(path, "wb").close()
    space.cleanup()
    assert all(os.listdir(root) == [] for root in roots)
    space.cleanup()


def test_tmp_dirs_parse_commas_and_default() -> None:
    assert parse_tmp_dirs("/x, /y") == ("/x", "/y")
    assert parse_tmp_dirs(f"/x{os.pathsep}/y") == ("/x", "/y")
    assert len(parse_tmp_dirs(None)) == 1


def test_partitions_keep_equal_keys_together_and_change_with_level() -> None:
    batch = _batch(1000)
    parts = partition_by_hash(batch, [batch.column(0)], 4)
    assert sum(p.num_rows for p in parts if p is not None) == 1000
    seen: dict[int, int] = {}
    for number, part in enumerate(parts):
        for key in ([] if part is None else part.column(0).to_pylist()):
            assert seen.setdefault(key, number) == number
    keys = pa.array(range(10_000))
    level0 = partition_indices([keys], 8, 0)
    level1 = partition_indices([keys], 8, 1)
    assert (level0 != level1).mean() > 0.5
    # rows of one level-0 partition spread over all partitions at level 1
    assert len(set(level1[level0 == 3].tolist())) == 8


def test_budget_try_reserve_does_not_overcommit() -> None:
    budget = MemoryBudget(100)
    assert budget.try_reserve(60)
    assert not budget.try_reserve(50)
    assert budget.used == 60 and budget.available == 40
    budget.release(60)
    assert budget.try_reserve(100)
    assert MemoryBudget(None).available is None


def test_memory_budget_accepts_a_share_of_physical_memory() -> None:
    assert parse_memory_budget("25%") == int(physical_memory_bytes() * 0.25)
    assert parse_memory_budget("2 GiB") == 2 << 30
    for bad in ("0%", "150%", "x%"):
        with pytest.raises(ConfigError, match="percentage"):
            parse_memory_budget(bad, "execution.memory-budget")
