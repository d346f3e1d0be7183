"""Checkpoint write time and upload volume of the state backends.

One subtask holds a keyed state of ``--rows`` rows (a string key, an int64 count and a
float64 sum per key) spread over ``--max-parallelism`` key groups. It is checkpointed
``--checkpoints`` times; between two checkpoints every row of ``--changed`` (a fraction) of
the key groups gets new values. Per backend -- ``hashmap``, ``rocksdb`` full, ``rocksdb``
incremental -- each checkpoint is written into a fresh local checkpoint directory,
committed, and followed by retention with one retained checkpoint, as a running job does.

Printed per backend and checkpoint: the time ``SnapshotBackend.write`` took (serializing,
the RocksDB write and checkpoint, the upload) and the bytes it uploaded (the files that
appeared in the checkpoint directory). The first checkpoint of every backend uploads the
whole state; the later ones show what a steady state costs. Finally the newest checkpoint
is restored (timed) and checked against the live state.

    python benchmarks/state_backend_snapshot.py [--rows 1000000] [--checkpoints 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from flowsql.runtime.checkpoint.backends import restore_tables, snapshot_backend
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, OperatorState
from flowsql.runtime.checkpoint.storage import CheckpointStorage
from flowsql.runtime.state import KEY_GROUP, KeyedTableState
from flowsql.runtime.state.store import StateStore

SCHEMA = pa.schema([("key", pa.string()), ("count", pa.int64()), ("sum", pa.float64())])
#: (label, state.backend.type, incremental)
BACKENDS = (("hashmap", "hashmap", False), ("rocksdb full", "rocksdb", False),
            ("rocksdb incremental", "rocksdb", True))


@dataclass
class Run:
    label: str
    seconds: list[float] = field(default_factory=list)
    uploaded: list[int] = field(default_factory=list)
    restore_seconds: float = 0.0


def _store(rows: int, max_parallelism: int) -> tuple[StateStore, KeyedTableState]:
    store = StateStore(0, 1, max_parallelism)
    state = store.keyed_table("totals", SCHEMA)
    keys = pa.array([f"key-{i:08d}" for i in range(rows)])
    groups = state.key_groups_of([keys], rows)
    rng = np.random.default_rng(7)
    state.replace(pa.table({KEY_GROUP: pa.array(groups, pa.int32()), "key": keys,
                            "count": pa.array(rng.integers(0, 1_000, rows)),
                            "sum": pa.array(rng.random(rows) * 1_000)}))
    return store, state


def _change(state: KeyedTableState, groups: np.ndarray, step: int) -> None:
    """New values for every row of ``groups`` (a counter increment and a new sum)."""
    rows = state.rows
    hit = np.isin(rows.column(KEY_GROUP).to_numpy(), groups)
    count = rows.column("count").to_numpy() + hit
    total = np.where(hit, rows.column("sum").to_numpy() + step, rows.column("sum").to_numpy())
    state.replace(rows.set_column(2, "count", pa.array(count))
                  .set_column(3, "sum", pa.array(total)))


def _files(storage: CheckpointStorage) -> dict[str, int]:
    selector = pafs.FileSelector(storage.job_path, recursive=True, allow_not_found=True)
    return {info.path: info.size for info in storage.filesystem.get_file_info(selector)
            if info.type == pafs.FileType.File}


def _run(label: str, kind: str, incremental: bool, args: argparse.Namespace,
         workdir: Path) -> Run:
    store, state = _store(args.rows, args.max_parallelism)
    storage = CheckpointStorage.from_uri(str(workdir / label.replace(" ", "-")), "bench")
    local_dir = str(workdir / "rocksdb")
    rng = np.random.default_rng(11)
    per_checkpoint = max(1, round(args.changed * args.max_parallelism))
    run = Run(label)
    backend = snapshot_backend(kind, storage, "agg", 0, incremental=incremental,
                               local_dir=local_dir)
    try:
        for n in range(1, args.checkpoints + 1):
            if n > 1:
                _change(state, rng.choice(args.max_parallelism, per_checkpoint, replace=False),
                        n)
            before = _files(storage)
            tables = store.snapshot()
            started = time.perf_counter()
            acknowledged = backend.write(n, tables)
            run.seconds.append(time.perf_counter() - started)
            after = _files(storage)
            run.uploaded.append(sum(size for path, size in after.items() if path not in before))
            metadata = CheckpointMetadata("bench", n, n, n, (
                OperatorState("agg", 1, args.max_parallelism, (acknowledged,)),))
            storage.commit(metadata)
            storage.apply_retention(num_retained=1)
    finally:
        backend.close()
    started = time.perf_counter()
    restored = restore_tables(storage, metadata, "agg", 0, 1, local_dir=local_dir)
    run.restore_seconds = time.perf_counter() - started
    if not restored["keyed/totals"].equals(store.snapshot()["keyed/totals"],
                                           check_metadata=True):
        raise SystemExit(f"{label}: the restored state differs from the live state")
    return run


def _mb(size: float) -> str:
    return f"{size / 1e6:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--max-parallelism", type=int, default=1024)
    parser.add_argument("--changed", type=float, default=0.01,
                        help="fraction of the key groups changed between checkpoints")
    parser.add_argument("--checkpoints", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="flowsql-state-bench-") as directory:
        runs = [_run(label, kind, incremental, args, Path(directory))
                for label, kind, incremental in BACKENDS]
    changed = max(1, round(args.changed * args.max_parallelism))
    print(f"keyed state: {args.rows} rows, {args.max_parallelism} key groups, "
          f"{changed} key groups changed between checkpoints, {args.checkpoints} checkpoints")
    print()
    print("| checkpoint | " + " | ".join(f"{r.label} s | {r.label} MB" for r in runs) + " |")
    print("|---:|" + "---:|---:|" * len(runs))
    for index in range(args.checkpoints):
        cells = " | ".join(f"{r.seconds[index]:.3f} | {_mb(r.uploaded[index])}" for r in runs)
        print(f"| {index + 1} | {cells} |")
    print()
    print("| backend | first: s | first: MB | later: mean s | later: mean MB | "
          "later: median MB | restore s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        later_seconds, later_bytes = r.seconds[1:] or [0.0], r.uploaded[1:] or [0]
        print(f"| {r.label} | {r.seconds[0]:.3f} | {_mb(r.uploaded[0])} | "
              f"{statistics.mean(later_seconds):.3f} | {_mb(statistics.mean(later_bytes))} | "
              f"{_mb(statistics.median(later_bytes))} | {r.restore_seconds:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
