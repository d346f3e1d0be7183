"""What checkpoints cost: throughput with checkpoints off, on with the hashmap backend and
on with the rocksdb backend (incremental), checkpoint duration and size, and the time from
kill -9 of a worker to the first output after the restore.

Size is what a restore reads (the checkpoint's files and the shared files it references),
uploaded what the checkpoint added: they differ for incremental rocksdb checkpoints.

Workloads: a TUMBLE 1 s count/sum per key over 10 thousand keys, and the unwindowed
GROUP BY count/sum over 1 million keys (a changelog), datagen -> blackhole, the sources and
queries of ``streaming_throughput.py``; 1 s checkpoints into a local directory. Each run
is a fresh process (its own peak RSS), at parallelism 1 and 2.

Recovery: at parallelism 2 a throttled source (200 thousand events/s) feeds the query
streamed to this process (``Result.stream()``); 3 s in, one worker is killed with
SIGKILL; the figure is the time until the first batch that arrives after the kill. It
includes the restart delay (``restart-strategy.fixed-delay.delay``, 1 s by default as in
Flink), starting a new worker process, and loading the state of the latest checkpoint.

    python benchmarks/checkpoint_overhead.py [--events 20000000] [--parallelism 1,2]
        [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import tempfile
import time
from typing import Any

from streaming_throughput import QUERIES, RssSampler, in_child, source_ddl, streaming_session

WORKLOADS = {"tumble": 10_000, "group": 1_000_000}
MODES = ("off", "hashmap", "rocksdb")


def configure(session: Any, mode: str, directory: str) -> None:
    if mode == "off":
        return
    session.sql("SET 'execution.checkpointing.interval' = '1 s'")
    session.sql(f"SET 'execution.checkpointing.dir' = '{directory}'")
    session.sql(f"SET 'state.backend.type' = '{mode}'")
    if mode == "rocksdb":
        session.sql("SET 'execution.checkpointing.incremental' = 'true'")


def run_one(workload: str, mode: str, events: int, parallelism: int) -> dict[str, Any]:
    directory = tempfile.mkdtemp(prefix="flowsql-bench-checkpoints-")
    try:
        session = streaming_session(parallelism)
        columns, query = QUERIES[workload]
        session.sql(source_ddl(1000, 10).replace("TABLE src", "TABLE warm"))
        session.sql(f"CREATE TABLE warm_sink ({columns}) WITH ('connector' = 'blackhole')")
        session.sql(f"INSERT INTO warm_sink {query.replace('FROM src', 'FROM warm')}"
                    .replace("TABLE src", "TABLE warm")).job.wait()
        configure(session, mode, directory)
        session.sql(source_ddl(events, WORKLOADS[workload]))
        session.sql(f"CREATE TABLE sink ({columns}) WITH ('connector' = 'blackhole')")
        sampler = RssSampler(session)
        started = time.perf_counter()
        job = session.sql(f"INSERT INTO sink {query}").job
        job.wait()
        seconds = time.perf_counter() - started
        peak = sampler.stop()
        summary = job.checkpoint_summary() or {}
        session.close()
        return {"seconds": seconds, "events_per_s": events / seconds, "peak_rss_mib": peak,
                "checkpoints": summary.get("checkpoints_completed", 0),
                "duration_ms": summary.get("average_duration_ms"),
                "size_bytes": summary.get("average_size_bytes"),
                "uploaded_bytes": summary.get("average_uploaded_bytes")}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def recovery(workload: str, mode: str) -> dict[str, Any]:
    """Seconds from kill -9 of a worker to the first streamed batch after it."""
    directory = tempfile.mkdtemp(prefix="flowsql-bench-recovery-")
    try:
        session = streaming_session(2)
        configure(session, mode, directory)
        rate = 200_000
        session.sql(source_ddl(rate * 12, WORKLOADS[workload], rate=rate))
        result = session.sql(QUERIES[workload][1] if workload != "tumble"
                             else QUERIES["filter"][1])
        started = time.monotonic()
        killed_at: float | None = None
        first_after: float | None = None
        for _ in result.stream():
            now = time.monotonic()
            if killed_at is None and now - started > 3.0:
                pid = session.parallel_runner.worker_pids[1]
                os.kill(pid, signal.SIGKILL)
                killed_at = time.monotonic()
            elif killed_at is not None and first_after is None and now > killed_at + 0.05:
                first_after = now
                break
        session.close()
        if killed_at is None or first_after is None:
            return {"recovery_s": None}
        return {"recovery_s": first_after - killed_at}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000_000)
    parser.add_argument("--parallelism", default="1,2")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--recovery-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        workload, mode, events, parallelism = args.child
        print(json.dumps(run_one(workload, mode, int(events), int(parallelism))))
        return 0
    if args.recovery_child:
        print(json.dumps(recovery(*args.recovery_child)))
        return 0
    levels = [int(p) for p in args.parallelism.split(",")]
    modes = args.modes.split(",")
    workloads = args.workloads.split(",")
    if args.markdown:
        print("| workload | p | checkpoints | events/s | vs off | checkpoints taken | "
              "avg duration | avg size | avg uploaded | peak RSS |")
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for workload in workloads:
        for p in levels:
            baseline = None
            for mode in modes:
                f = in_child(["--child", workload, mode, str(args.events), str(p)], __file__)
                if mode == "off":
                    baseline = f["events_per_s"]
                loss = (f"{(f['events_per_s'] / baseline - 1) * 100:+.1f}%"
                        if baseline and mode != "off" else "")
                duration = (f"{f['duration_ms']:.0f} ms" if f["duration_ms"] is not None
                            else "")
                size = (f"{f['size_bytes'] / 2**20:.1f} MiB" if f["size_bytes"] is not None
                        else "")
                uploaded = (f"{f['uploaded_bytes'] / 2**20:.1f} MiB"
                            if f["uploaded_bytes"] is not None else "")
                cells = [workload, str(p), mode, f"{f['events_per_s'] / 1e6:.2f} M", loss,
                         str(f["checkpoints"]), duration, size, uploaded,
                         f"{f['peak_rss_mib']:.0f} MiB"]
                if args.markdown:
                    print("| " + " | ".join(cells) + " |", flush=True)
                else:
                    print("  ".join(cells), flush=True)
    for workload in workloads:
        for mode in [m for m in modes if m != "off"]:
            r = in_child(["--recovery-child", workload, mode], __file__)
            figure = "n/a" if r["recovery_s"] is None else f"{r['recovery_s']:.2f} s"
            print(f"recovery after kill -9 ({'filter' if workload == 'tumble' else workload}"
                  f", {mode}, p2): {figure}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
