"""Streaming throughput: datagen -> query -> blackhole, events per second and peak RSS.

Workloads (the issue's list): a filter, a TUMBLE 1 s count/sum per key, a HOP 10 s / 2 s
count/sum per key, and an unwindowed GROUP BY count/sum (a changelog), each with 10
thousand and 1 million distinct keys. The source is a deterministic ``datagen`` table:
``id`` and the event time ``ts`` are sequences (one event per millisecond of event time),
the key ``k`` and the value ``v`` seeded random numbers; the source is unthrottled and the
job runs in streaming mode (watermarks per record, ``pipeline.auto-watermark-interval`` 0,
windows fire as the watermark passes them). Every run is ``INSERT INTO`` a blackhole
table, timed from submission to the end of the job, in a fresh process of its own so its
peak RSS is its own.

The latency run: the filter as a SELECT streamed to this process (``Result.stream()``),
first unthrottled to find that pipeline's maximum rate, then over a source throttled to
half of it, with ``execution.buffer-timeout`` = 10 ms; every output row's latency is the
time it reached the consumer minus the time the source was due to produce it (row ``id``
is due ``id / rate`` seconds after the job starts; the source sends a batch when its last
row is due, so a row waits for its batch up to the buffer timeout, and that counts).

Flink figures are the issue's (Apache Flink 2.3 on this same 2-core machine, PyFlink, the
same SQL, deterministic datagen sequence, blackhole sink); ``benchmarks/flink_baseline.py``
measures Flink here again.

Each workload runs at parallelism 1 and 2 (``--parallelism``); at 2 the job runs on two
worker processes with hash exchanges before the keyed operators, and peak RSS is the sum
over the session process and its workers.

    python benchmarks/streaming_throughput.py [--events 5000000] [--parallelism 1,2]
        [--workloads filter,tumble,hop,group] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np

import flowsql

#: events/s of Apache Flink 2.3 at parallelism 1 and 2 on this machine (from the issue)
FLINK = {"filter": (1.37e6, 2.71e6), "tumble": (0.94e6, 0.75e6), "hop": (0.98e6, 0.75e6),
         "group": (0.75e6, 0.66e6)}
KEYS = (10_000, 1_000_000)
START_MS = 1_700_000_000_000

QUERIES = {
    "filter": ("id BIGINT, k BIGINT, v BIGINT",
               "SELECT id, k, v FROM src WHERE v < 500"),
    "tumble": ("k BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), c BIGINT, "
               "s BIGINT",
               "SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM TABLE(TUMBLE("
               "TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND)) "
               "GROUP BY k, window_start, window_end"),
    "hop": ("k BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), c BIGINT, "
            "s BIGINT",
            "SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM TABLE(HOP("
            "TABLE src, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND)) "
            "GROUP BY k, window_start, window_end"),
    "group": ("k BIGINT, c BIGINT, s BIGINT",
              "SELECT k, COUNT(*), SUM(v) FROM src GROUP BY k"),
}


def source_ddl(events: int, keys: int, rate: int = 0) -> str:
    return f"""CREATE TABLE src (id BIGINT, k BIGINT, v BIGINT, ts TIMESTAMP(3),
                 WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
               WITH ('connector' = 'datagen', 'rows-per-second' = '{rate}',
                     'fields.id.kind' = 'sequence', 'fields.id.start' = '0',
                     'fields.id.end' = '{events - 1}',
                     'fields.ts.kind' = 'sequence', 'fields.ts.start' = '{START_MS}',
                     'fields.ts.end' = '{START_MS + events - 1}',
                     'fields.k.min' = '0', 'fields.k.max' = '{keys - 1}',
                     'fields.v.min' = '0', 'fields.v.max' = '999', 'seed' = '42')"""


def streaming_session(parallelism: int) -> flowsql.Session:
    return flowsql.connect(**{"execution.runtime-mode": "streaming",
                              "pipeline.auto-watermark-interval": "0",
                              "parallelism.default": str(parallelism)})


class RssSampler:
    """Peak of the summed RSS of this process and the session's worker processes,
    sampled every 20 ms (workers are separate processes: their memory counts too)."""

    def __init__(self, session: flowsql.Session) -> None:
        self.session = session
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            runner = self.session.parallel_runner
            pids = [os.getpid(), *(runner.worker_pids if runner is not None else [])]
            self.peak = max(self.peak, sum(_rss_bytes(pid) for pid in pids))

    def stop(self) -> float:
        """The peak in MiB (at least this process's own peak)."""
        self._done.set()
        self._thread.join()
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return max(self.peak, own) / 2**20


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def run_one(workload: str, events: int, keys: int, parallelism: int) -> dict[str, float]:
    """One job in this process: seconds, events/s, records out of the query. A tiny job
    of the same query runs first, so imports and (at parallelism > 1) the worker processes
    are ready before the clock starts, as a Flink cluster is up before a job is submitted."""
    session = streaming_session(parallelism)
    columns, query = QUERIES[workload]
    session.sql(source_ddl(1000, 10).replace("TABLE src", "TABLE warm"))
    session.sql(f"CREATE TABLE warm_sink ({columns}) WITH ('connector' = 'blackhole')")
    session.sql(f"INSERT INTO warm_sink {query.replace('FROM src', 'FROM warm')}"
                .replace("TABLE src", "TABLE warm")).job.wait()
    session.sql(source_ddl(events, keys))
    session.sql(f"CREATE TABLE sink ({columns}) WITH ('connector' = 'blackhole')")
    sampler = RssSampler(session)
    started = time.perf_counter()
    job = session.sql(f"INSERT INTO sink {query}").job
    job.wait()
    seconds = time.perf_counter() - started
    peak = sampler.stop()
    written = next((m.get("records_written", m["records_in"]) for m in job.metrics()
                    if m["operator"].startswith("SinkExec")), 0)
    session.close()
    return {"seconds": seconds, "events_per_s": events / seconds, "rows_out": written,
            "peak_rss_mib": peak}


def latency(seconds: float, parallelism: int) -> dict[str, float]:
    """p50/p99 latency (ms) of the filter, read by this process as a streamed SELECT, with
    a 10 ms buffer timeout, at half the maximum rate of that same pipeline (measured
    first, unthrottled, with the same consumer work per batch)."""
    session = streaming_session(parallelism)
    session.sql("SET 'execution.buffer-timeout' = '10'")
    session.sql(source_ddl(1000, 10).replace("TABLE src", "TABLE warm"))
    session.sql(QUERIES["filter"][1].replace("FROM src", "FROM warm")).to_arrow()  # warm up
    events = 5_000_000
    session.sql(source_ddl(events, KEYS[0]).replace("TABLE src", "TABLE fast"))
    started = time.perf_counter()
    _lags(session.sql(QUERIES["filter"][1].replace("FROM src", "FROM fast")), 1.0)
    maximum = events / (time.perf_counter() - started)
    rate = int(maximum / 2)
    session.sql(source_ddl(int(rate * seconds), KEYS[0], rate=rate))
    everything = _lags(session.sql(QUERIES["filter"][1]), rate)
    session.close()
    warm = everything[everything.size // 10:]  # the first tenth warms the process up
    return {"max_rate": maximum, "rate": rate, "p50_ms": float(np.percentile(warm, 50)),
            "p99_ms": float(np.percentile(warm, 99))}


def _lags(result: flowsql.Result, rate: float) -> np.ndarray:
    """Per row: when it reached this process minus when the source was due to produce it
    (row ``id`` at ``id / rate`` seconds after the start), in ms."""
    lags: list[np.ndarray] = []
    started = time.perf_counter()
    for batch in result.stream():
        arrived = time.perf_counter() - started
        due = batch.column(1).to_numpy() / rate
        lags.append((arrived - due) * 1000.0)
    return np.concatenate(lags)


def in_child(args: list[str], script: str = __file__) -> dict[str, Any]:
    """Run ``script`` with ``args`` in a fresh process; its last stdout line is JSON."""
    done = subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"benchmark child failed: {done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--latency-seconds", type=float, default=10.0)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--parallelism", default="1,2",
                        help="comma-separated parallelisms to run (default 1,2)")
    parser.add_argument("--workloads", default=",".join(QUERIES),
                        help=f"comma-separated subset of {', '.join(QUERIES)}")
    parser.add_argument("--child", nargs=4, metavar=("WORKLOAD", "EVENTS", "KEYS", "P"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--latency-child", nargs=2, metavar=("SECONDS", "P"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        workload, events, keys, parallelism = args.child
        print(json.dumps(run_one(workload, int(events), int(keys), int(parallelism))))
        return 0
    if args.latency_child:
        seconds, parallelism = args.latency_child
        print(json.dumps(latency(float(seconds), int(parallelism))))
        return 0

    levels = [int(p) for p in args.parallelism.split(",")]
    workloads = args.workloads.split(",")
    rows: dict[tuple[str, int, int], dict[str, float]] = {}
    for workload in workloads:
        for keys in KEYS:
            for p in levels:
                figures = in_child(["--child", workload, str(args.events), str(keys), str(p)])
                rows[workload, keys, p] = figures
                print(f"{workload:7s} keys={keys:>9,d} p{p}  {figures['events_per_s'] / 1e6:6.2f}"
                      f" M events/s  {figures['seconds']:6.2f} s  rows out "
                      f"{int(figures['rows_out']):>9,d}  peak RSS "
                      f"{figures['peak_rss_mib']:7.0f} MiB", file=sys.stderr)
    latencies = {}
    if "filter" in workloads:
        for p in levels:
            latencies[p] = in_child(["--latency-child", str(args.latency_seconds), str(p)])

    if args.markdown:
        print("| workload | keys | " + " | ".join(
            f"events/s (p{p}) | Flink p{p} | ratio | peak RSS p{p}" for p in levels) + " |")
        print("|---|---:|" + "---:|---:|---:|---:|" * len(levels))
    for workload in workloads:
        for keys in KEYS:
            cells = []
            for p in levels:
                figures = rows[workload, keys, p]
                flink = FLINK[workload][min(p, 2) - 1]
                ratio = figures["events_per_s"] / flink
                cells.append((figures["events_per_s"] / 1e6, flink / 1e6, ratio,
                              figures["peak_rss_mib"]))
            if args.markdown:
                print(f"| {workload} | {keys:,d} | " + " | ".join(
                    f"{e:.2f} M | {f:.2f} M | {r:.2f} | {m:.0f} MiB" for e, f, r, m in cells)
                    + " |")
            else:
                print(f"{workload:7s} {keys:>9,d}  " + "  ".join(
                    f"p{p} {e:6.2f} M/s (Flink {f:.2f}, ratio {r:.2f}, RSS {m:.0f} MiB)"
                    for p, (e, f, r, m) in zip(levels, cells)))
    for p, lat in latencies.items():
        print(f"\nfilter streamed to the session at p{p}: maximum "
              f"{lat['max_rate'] / 1e6:.2f} M events/s; at half of it "
              f"({lat['rate'] / 1e6:.2f} M events/s), buffer timeout 10 ms: "
              f"p50 {lat['p50_ms']:.1f} ms, p99 {lat['p99_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
