"""Chaos runs of streaming jobs: kill -9 worker processes at random times and compare the
committed output with the output of a run without failures.

A job reads bounded, deterministic sources (datagen sequences throttled so the job runs a
few seconds) at parallelism 2 with 200 ms checkpoints, and writes either

* an append-only result into a ``filesystem`` table (exactly-once by two-phase commit):
  the committed files, as a multiset of rows, must equal the failure-free run's; or
* an updating result (GROUP BY, Top-N) streamed to the client, which is at-least-once:
  replayed changes arrive twice, so the client keeps the latest row per key (as an upsert
  sink would) and the final rows must equal the failure-free run's.

``ChaosRun`` kills a worker (chosen by the seed) at each of ``kill_at`` seconds after the
start; the restart strategy brings the job back from its latest completed checkpoint.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import flowsql

ROWS = 30_000
ROWS_PER_SECOND = 10_000

#: every chaos source: a sequence ``v`` with a key, an event time 10 ms apart and a watermark
SOURCE_DDL = """CREATE TABLE {name} (
    v BIGINT, k AS CAST(v % 23 AS INT), ts AS TO_TIMESTAMP_LTZ(v * 10, 3),
    WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH ('connector' = 'datagen', 'rows-per-second' = '{rate}',
        'fields.v.kind' = 'sequence', 'fields.v.start' = '{start}', 'fields.v.end' = '{end}')"""


def chaos_session(checkpoint_dir: Path, mode: str = "exactly_once") -> Any:
    session = flowsql.connect()
    for key, value in (("execution.runtime-mode", "streaming"), ("parallelism.default", "2"),
                       ("execution.checkpointing.interval", "200 ms"),
                       ("execution.checkpointing.mode", mode),
                       ("execution.checkpointing.dir", str(checkpoint_dir)),
                       ("restart-strategy.type", "fixed-delay"),
                       ("restart-strategy.fixed-delay.attempts", "10"),
                       ("restart-strategy.fixed-delay.delay", "100 ms")):
        session.sql(f"SET '{key}' = '{value}'")
    return session


def create_sources(session: Any, rows: int = ROWS, rate: int = ROWS_PER_SECOND) -> None:
    session.sql(SOURCE_DDL.format(name="src", rate=rate, start=1, end=rows))
    session.sql(SOURCE_DDL.format(name="src2", rate=rate, start=1, end=rows))


class Killer:
    """Kills one of ``session``'s workers at each of ``kill_at`` seconds from ``start``."""

    def __init__(self, session: Any, kill_at: Sequence[float], seed: int) -> None:
        self.session = session
        self.kill_at = sorted(kill_at)
        self.random = random.Random(seed)
        self.killed: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Killer:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        for moment in self.kill_at:
            if self._stop.wait(max(0.0, self._started + moment - time.monotonic())):
                return
            runner = self.session.parallel_runner
            pids = runner.worker_pids if runner is not None else []
            if not pids:
                continue
            pid = pids[self.random.randrange(len(pids))]
            try:
                os.kill(pid, signal.SIGKILL)
                self.killed.append(pid)
            except ProcessLookupError:
                pass


def insert_rows(session: Any, insert: str, out: Path, kill_at: Sequence[float] = (),
                seed: int = 0, timeout_s: float = 120.0) -> tuple[Counter[tuple[Any, ...]], Any]:
    """Run ``insert`` (into a filesystem table at ``out``) with kills; the committed rows
    as a multiset, and the job."""
    job = session.sql(insert).job
    killer = Killer(session, kill_at, seed).start()
    try:
        status = job.wait(timeout_s)
    finally:
        killer.stop()
    assert status == "FINISHED", f"job ended {status}"
    hidden = [p.name for p in out.glob(".*")]
    assert not hidden, f"files left in progress: {hidden}"
    return committed_rows(out), job


def committed_rows(out: Path) -> Counter[tuple[Any, ...]]:
    files = sorted(out.glob("*.parquet"))
    if not files:
        return Counter()
    table = pa.concat_tables([pq.read_table(f) for f in files])
    return Counter(zip(*(table.column(i).to_pylist() for i in range(table.num_columns))))


def upserted_rows(session: Any, query: str, key_width: int, kill_at: Sequence[float] = (),
                  seed: int = 0) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Stream ``query``'s changelog to the end with kills, keeping the latest row per key
    (its first ``key_width`` columns), as an upsert sink does."""
    result = session.sql(query)
    rows: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    killer = Killer(session, kill_at, seed).start()
    try:
        for batch in result.stream():
            ops = batch.column(0).to_pylist()
            values = list(zip(*(batch.column(i).to_pylist()
                                for i in range(1, batch.num_columns))))
            for op, row in zip(ops, values):
                key = row[:key_width]
                if op in ("+I", "+U"):
                    rows[key] = row
                elif op == "-D":
                    rows.pop(key, None)
    finally:
        killer.stop()
    return rows


def latest_checkpoint(checkpoints: Path) -> Path | None:
    """The completed checkpoint (``chk-<n>`` with its ``_metadata``) of highest id under a
    checkpoint directory, or None."""
    from flowsql.runtime.checkpoint import paths

    completed = [(paths.checkpoint_id_of(c.name), c) for job in checkpoints.glob("*")
                 for c in job.glob("chk-*") if (c / "_metadata").exists()]
    numbered = [(n, c) for n, c in completed if n is not None]
    return max(numbered, key=lambda item: item[0])[1] if numbered else None
