"""Savepoint and restore of a large GROUP BY state, on both state backends, and rescaling.

A changelog GROUP BY over ``--keys`` distinct keys (a datagen sequence, every key once, so
the state holds one group per key, united with a 100-rows-per-second ticker that keeps the
job running) runs into a blackhole sink at parallelism P until the sequence has been read;
then ``job.stop(savepoint=True)`` takes a savepoint and stops it. The same INSERT is
started again from the savepoint, at P or at another parallelism, with the ticker bounded:
no source has anything left to read, so the time until the job finishes is the time to
restore the state (plus the final checkpoint of a bounded job).

Printed per case: the backend, the parallelism before -> after, the time to take the
savepoint (``stop`` called to stopped), the groups it holds, its size on disk, and the
restore time (the restored job submitted to finished: deployment, reading the savepoint,
the final checkpoint); at the end the peak RSS of the session process (workers are
separate processes). The restored job must report every state ``restored``.

    python benchmarks/savepoint_restore.py [--keys 1000000]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import flowsql

#: (backend, parallelism before, parallelism after)
CASES = (("hashmap", 1, 1), ("rocksdb", 1, 1), ("hashmap", 2, 2), ("rocksdb", 2, 2),
         ("hashmap", 2, 1), ("hashmap", 1, 2), ("rocksdb", 2, 1), ("rocksdb", 1, 2))


def _session(backend: str, parallelism: int, root: Path, keys: int,
             restored: bool = False) -> flowsql.Session:
    session = flowsql.connect()
    for key, value in (("execution.runtime-mode", "streaming"),
                       ("parallelism.default", str(parallelism)),
                       ("state.backend.type", backend),
                       ("execution.checkpointing.interval", "10 min"),
                       ("execution.checkpointing.dir", str(root / "checkpoints")),
                       ("execution.checkpointing.savepoint-dir", str(root / "savepoints"))):
        session.sql(f"SET '{key}' = '{value}'")
    session.sql("CREATE TABLE src (v BIGINT) WITH ('connector' = 'datagen', "
                "'rows-per-second' = '0', 'fields.v.kind' = 'sequence', "
                f"'fields.v.start' = '1', 'fields.v.end' = '{keys}')")
    bound = "'number-of-rows' = '1', " if restored else ""
    session.sql(f"CREATE TABLE ticker (v BIGINT) WITH ('connector' = 'datagen', {bound}"
                f"'rows-per-second' = '100', 'fields.v.min' = '1', 'fields.v.max' = '{keys}')")
    session.sql("CREATE TABLE sink (k BIGINT, c BIGINT, s BIGINT) "
                "WITH ('connector' = 'blackhole')")
    return session


INSERT = ("INSERT INTO sink SELECT v, COUNT(*), SUM(v) FROM "
          "(SELECT v FROM src UNION ALL SELECT v FROM ticker) GROUP BY v")


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _wait_read(job: flowsql.Job, keys: int, timeout_s: float = 600.0) -> None:
    """Until the GROUP BY has taken in every key."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        taken = sum(m.get("records_in", 0) for m in job.metrics()
                    if m["operator"].startswith("GroupAggregate"))
        if taken >= keys:
            return
        time.sleep(0.2)
    raise RuntimeError("the job did not read its source in time")


def run_case(backend: str, before: int, after: int, keys: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        session = _session(backend, before, root, keys)
        try:
            job = session.sql(INSERT).job
            _wait_read(job, keys)
            started = time.perf_counter()
            savepoint = job.stop(savepoint=True)
            stop_s = time.perf_counter() - started
        finally:
            session.close()
        size = _size(Path(savepoint))
        restored = _session(backend, after, root, keys, restored=True)
        try:
            restored.sql(f"SET 'execution.savepoint.path' = '{savepoint}'")
            started = time.perf_counter()
            result = restored.sql(INSERT)
            status = result.job.wait(600)
            restore_s = time.perf_counter() - started
            report = result.restore_report.to_pylist()
            verdicts = {r["verdict"] for r in report}
            groups = sum(r["rows"] for r in report if r["state"] == "keyed/groups")
        finally:
            restored.close()
        assert status == "FINISHED", status
        assert verdicts <= {"restored", "new"}, verdicts
        return {"backend": backend, "rescale": f"{before} -> {after}", "stop_s": stop_s,
                "size_mb": size / 2**20, "restore_s": restore_s, "groups": groups}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=1_000_000)
    args = parser.parse_args()
    print(f"GROUP BY state of {args.keys:,} keys (one group per key)")
    print(f"{'backend':8} {'p':>7} {'groups':>10} {'savepoint s':>12} {'size MB':>8} "
          f"{'restore s':>10}")
    for backend, before, after in CASES:
        row = run_case(backend, before, after, args.keys)
        print(f"{row['backend']:8} {row['rescale']:>7} {row['groups']:>10,} "
              f"{row['stop_s']:12.2f} {row['size_mb']:8.1f} {row['restore_s']:10.2f}",
              flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the session process: {peak:.0f} MB")


if __name__ == "__main__":
    main()
