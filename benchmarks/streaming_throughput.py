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

The latency run: the filter job over a throttled source at half the filter's measured
throughput, with ``execution.buffer-timeout`` = 10 ms; every output row's latency is the
time it reached the consumer minus the time the source was due to produce it (row ``id``
is due ``id / rate`` seconds after the job starts; the source sends a batch when its last
row is due, so a row waits for its batch up to the buffer timeout, and that counts).

Flink figures are the issue's (Apache Flink 2.3 on this same 2-core machine, PyFlink, the
same SQL, deterministic datagen sequence, blackhole sink).

    python benchmarks/streaming_throughput.py [--events 2000000] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

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


def streaming_session() -> flowsql.Session:
    return flowsql.connect(**{"execution.runtime-mode": "streaming",
                              "pipeline.auto-watermark-interval": "0"})


def run_one(workload: str, events: int, keys: int) -> dict[str, float]:
    """One job in this process: seconds, events/s, records out of the query."""
    session = streaming_session()
    session.sql(source_ddl(events, keys))
    columns, query = QUERIES[workload]
    session.sql(f"CREATE TABLE sink ({columns}) WITH ('connector' = 'blackhole')")
    started = time.perf_counter()
    job = session.sql(f"INSERT INTO sink {query}").job
    job.wait()
    seconds = time.perf_counter() - started
    written = next((m.get("records_written", m["records_in"]) for m in job.metrics()
                    if m["operator"].startswith("SinkExec")), 0)
    session.close()
    return {"seconds": seconds, "events_per_s": events / seconds, "rows_out": written,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def latency(events_per_s: float, seconds: float) -> dict[str, float]:
    """p50/p99 latency (ms) of the filter at ``events_per_s`` with a 10 ms buffer timeout."""
    rate = int(events_per_s)
    events = int(rate * seconds)
    session = streaming_session()
    session.sql("SET 'execution.buffer-timeout' = '10'")
    session.sql(source_ddl(events, KEYS[0], rate=rate))
    result = session.sql(QUERIES["filter"][1])
    lags: list[np.ndarray] = []
    started = time.perf_counter()
    for batch in result.stream():
        arrived = time.perf_counter() - started
        due = batch.column(1).to_numpy() / rate
        lags.append((arrived - due) * 1000.0)
    everything = np.concatenate(lags)
    warm = everything[everything.size // 10:]  # the first tenth warms the process up
    return {"rate": rate, "p50_ms": float(np.percentile(warm, 50)),
            "p99_ms": float(np.percentile(warm, 99))}


def in_child(args: list[str]) -> dict[str, float]:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"benchmark child failed: {done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--latency-seconds", type=float, default=10.0)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("WORKLOAD", "EVENTS", "KEYS"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--latency-child", nargs=2, metavar=("RATE", "SECONDS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        workload, events, keys = args.child
        print(json.dumps(run_one(workload, int(events), int(keys))))
        return 0
    if args.latency_child:
        print(json.dumps(latency(float(args.latency_child[0]), float(args.latency_child[1]))))
        return 0

    rows = []
    for workload in QUERIES:
        for keys in KEYS:
            figures = in_child(["--child", workload, str(args.events), str(keys)])
            rows.append((workload, keys, figures))
            print(f"{workload:7s} keys={keys:>9,d}  {figures['events_per_s'] / 1e6:6.2f} M "
                  f"events/s  {figures['seconds']:6.2f} s  rows out {int(figures['rows_out']):>9,d}"
                  f"  peak RSS {figures['peak_rss_mib']:7.0f} MiB", file=sys.stderr)
    filter_rate = max(f["events_per_s"] for w, _, f in rows if w == "filter")
    lat = in_child(["--latency-child", str(filter_rate / 2), str(args.latency_seconds)])

    if args.markdown:
        print("| workload | keys | events/s (p1) | Flink p1 | ratio to Flink | peak RSS |")
        print("|---|---:|---:|---:|---:|---:|")
    for workload, keys, figures in rows:
        flink = FLINK[workload][0]
        ratio = figures["events_per_s"] / flink
        if args.markdown:
            print(f"| {workload} | {keys:,d} | {figures['events_per_s'] / 1e6:.2f} M | "
                  f"{flink / 1e6:.2f} M | {ratio:.2f} | {figures['peak_rss_mib']:.0f} MiB |")
        else:
            print(f"{workload:7s} {keys:>9,d}  {figures['events_per_s'] / 1e6:6.2f} M/s  "
                  f"Flink {flink / 1e6:.2f} M/s  ratio {ratio:.2f}  "
                  f"RSS {figures['peak_rss_mib']:.0f} MiB")
    print(f"\nfilter latency at {lat['rate'] / 1e6:.2f} M events/s (half the maximum), "
          f"buffer timeout 10 ms: p50 {lat['p50_ms']:.1f} ms, p99 {lat['p99_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
