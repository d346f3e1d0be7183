"""Throughput and latency of the parallel runtime against the output buffer timeout.

The experiment of the Flink paper's figure 4, on the mini-cluster at parallelism 2: two
sources (one per worker process) create small batches of time-stamped events, keep 9 in 10
of them (a grep-like filter chained into the source), and rebalance the survivors over
remote channels (Arrow IPC over TCP, credit-based) to two latency sinks, each placed on the
other worker than the source it is paired with. Per buffer timeout it runs two points:

* **max**: the sources run unthrottled (as fast as back-pressure lets them); prints the
  input rate in events/s and the p50/p99 end-to-end latency (creation to sink).
* **half**: the sources are paced to half of that timeout's max rate; prints p50/p99. This
  is the latency a job sees when it is not saturated, which is what the timeout bounds.
  Paced events are stamped with the time they were due, not the time they were made, so
  a source held back by back-pressure shows as latency (no coordinated omission); if the
  half rate cannot be sustained, its events/s falls short of half and its latency grows.

Each point is one job: ``--warmup`` seconds unmeasured, then ``--seconds`` measured. The
workers start once, before the first point. Every point checks that the sinks received
exactly the events that passed the filter. Writes a PNG (throughput and p99 latency against
the timeout) and, with ``--markdown``, prints a Markdown table.

    python benchmarks/buffer_timeout_latency.py [--markdown] [--plot docs/figures/...png]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowsql.runtime.cluster import EdgeSpec, MiniCluster, TaskSpec
from flowsql.runtime.cluster.benchmark_tasks import latency_percentile_ms

PARALLELISM = 2
DEFAULT_TIMEOUTS = (0, 1, 5, 10, 50, 100)
DEFAULT_PLOT = Path(__file__).resolve().parent.parent / "docs/figures/buffer_timeout_latency.png"
#: targets of the experiment: input rate at a 50 ms timeout; p99 at 5 ms, throttled to half
TARGET_RATE_AT_50_MS = 1_000_000
TARGET_P99_MS_AT_5_MS = 20.0


@dataclass(frozen=True)
class Point:
    """One measured run: input events/s and end-to-end latency percentiles in ms."""

    rate: float
    p50_ms: float
    p99_ms: float


def run_point(cluster: MiniCluster, timeout_ms: int, rate: float, args: argparse.Namespace
              ) -> Point:
    """Run the job once with ``rate`` input events/s in total (0: unthrottled)."""
    measure_from = time.time_ns() + int(args.warmup * 1e9)
    stop = measure_from + int(args.seconds * 1e9)
    window = {"measure_from_ns": measure_from, "stop_ns": stop}
    tasks = [TaskSpec("source", "grep_source", subtask=s, worker=s,
                      config={**window, "batch_rows": args.batch_rows,
                              "drop_every": args.drop_every, "rate": rate / PARALLELISM,
                              "first_seq": s << 40})
             for s in range(PARALLELISM)]
    # sink s runs on the other worker than source s, which sends to it first
    tasks += [TaskSpec("sink", "latency_sink", subtask=s, worker=(s + 1) % PARALLELISM,
                       config=window) for s in range(PARALLELISM)]
    edges = [EdgeSpec(f"source[{s}]", f"sink[{(s + k) % PARALLELISM}]")
             for s in range(PARALLELISM) for k in range(PARALLELISM)]
    settings = {"execution.buffer-timeout": str(timeout_ms)}
    results = cluster.run(tasks, edges, settings, timeout=args.warmup + args.seconds + 60)
    return summarize(results, args.seconds)


def summarize(results: dict[str, dict[str, Any]], seconds: float) -> Point:
    sources = [r for task, r in results.items() if task.startswith("source")]
    sinks = [r for task, r in results.items() if task.startswith("sink")]
    emitted = sum(r["emitted"] for r in sources)
    received = sum(r["events"] for r in sinks)
    if emitted != received:
        raise SystemExit(f"lost events: the filter passed {emitted}, the sinks got {received}")
    histogram = [pair for r in sinks for pair in r["histogram"]]
    return Point(rate=sum(r["created"] for r in sources) / seconds,
                 p50_ms=latency_percentile_ms(histogram, 0.50),
                 p99_ms=latency_percentile_ms(histogram, 0.99))


def plot(path: Path, timeouts: list[int], full: list[Point], half: list[Point]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [str(t) for t in timeouts]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.bar(labels, [p.rate / 1e6 for p in full], color="tab:blue")
    left.set_xlabel("buffer timeout (ms)")
    left.set_ylabel("throughput (million events/s)")
    left.set_title("max throughput")
    right.plot(labels, [p.p99_ms for p in full], "o-", label="p99, unthrottled")
    right.plot(labels, [p.p99_ms for p in half], "s-", label="p99, half of max rate")
    right.plot(labels, [p.p50_ms for p in half], "^--", label="p50, half of max rate")
    right.set_yscale("log")
    right.set_xlabel("buffer timeout (ms)")
    right.set_ylabel("end-to-end latency (ms)")
    right.set_title("latency")
    right.legend()
    figure.suptitle(f"flowsql mini-cluster, parallelism {PARALLELISM}: grep job over "
                    "remote channels")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)


def markdown(timeouts: list[int], full: list[Point], half: list[Point]) -> str:
    lines = ["| buffer timeout ms | max events/s | p50 ms | p99 ms | half-rate events/s "
             "| half-rate p50 ms | half-rate p99 ms |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {t} | {f.rate:,.0f} | {f.p50_ms:.2f} | {f.p99_ms:.2f} | {h.rate:,.0f} "
              f"| {h.p50_ms:.2f} | {h.p99_ms:.2f} |" for t, f, h in zip(timeouts, full, half)]
    return "\n".join(lines)


def targets(timeouts: list[int], full: list[Point], half: list[Point]) -> list[str]:
    lines = []
    if 50 in timeouts:
        rate = full[timeouts.index(50)].rate
        verdict = "met" if rate >= TARGET_RATE_AT_50_MS else "NOT met"
        lines.append(f"target >= {TARGET_RATE_AT_50_MS:,} events/s at 50 ms: {verdict} "
                     f"({rate:,.0f} events/s)")
    if 5 in timeouts:
        p99 = half[timeouts.index(5)].p99_ms
        verdict = "met" if p99 <= TARGET_P99_MS_AT_5_MS else "NOT met"
        lines.append(f"target p99 <= {TARGET_P99_MS_AT_5_MS:g} ms at 5 ms, half rate: "
                     f"{verdict} ({p99:.2f} ms)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeouts", type=lambda v: [int(t) for t in v.split(",")],
                        default=list(DEFAULT_TIMEOUTS), help="buffer timeouts in ms, e.g. 0,5,50")
    parser.add_argument("--seconds", type=float, default=4.0, help="measured seconds per point")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds per point")
    parser.add_argument("--batch-rows", type=int, default=1000, help="events per source batch")
    parser.add_argument("--drop-every", type=int, default=10,
                        help="the filter drops events whose sequence number is a multiple")
    parser.add_argument("--plot", type=Path, default=DEFAULT_PLOT, help="PNG to write")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)

    full: list[Point] = []
    half: list[Point] = []
    with MiniCluster(PARALLELISM) as cluster:
        for timeout in args.timeouts:
            best = run_point(cluster, timeout, 0, args)
            paced = run_point(cluster, timeout, best.rate / 2, args)
            full.append(best)
            half.append(paced)
            print(f"timeout {timeout:>4} ms: max {best.rate:>12,.0f} events/s  "
                  f"p50 {best.p50_ms:8.2f} ms  p99 {best.p99_ms:8.2f} ms | half rate "
                  f"{paced.rate:>12,.0f} events/s  p50 {paced.p50_ms:8.2f} ms  "
                  f"p99 {paced.p99_ms:8.2f} ms", flush=True)
    plot(args.plot, args.timeouts, full, half)
    print(f"plot: {args.plot}")
    print(*targets(args.timeouts, full, half), sep="\n")
    if args.markdown:
        print()
        print(markdown(args.timeouts, full, half))
    return 0


if __name__ == "__main__":
    sys.exit(main())
