"""Apache Flink baseline for the streaming workloads: datagen -> query -> blackhole, events/s.

The same workloads as ``benchmarks/streaming_throughput.py`` (whose ``QUERIES`` text and
``KEYS`` this script reuses as they are): a filter, a TUMBLE 1 s count/sum per key, a HOP
10 s / 2 s count/sum per key and an unwindowed GROUP BY count/sum, each with 10 thousand and
1 million keys, into a blackhole table, at parallelism 1 and 2, in Flink SQL streaming mode
(PyFlink ``TableEnvironment``, a local mini cluster). Each figure is one job timed from
``execute_sql("INSERT INTO ...")`` to the end of ``.wait()``, in a fresh process of its own
that first runs a small job of the same query so the JVM is warm, as our script does.

Flink lives in a virtual environment of its own, ``.venv-flink`` in the project root (it
pins old pyarrow and pandas), made here with ``python -m venv`` and
``pip install apache-flink==FLINK_VERSION`` when missing. This script never imports
pyflink: each job runs ``benchmarks/flink_job.py`` under ``.venv-flink/bin/python``.

The source differs from ours only where Flink's datagen connector has no such option:
no ``seed`` (``k`` and ``v`` are unseeded uniform random numbers in the same ranges), no
sequence generator for TIMESTAMP (a ``ts_ms`` BIGINT sequence over the same range, and the
event time ``ts AS CAST(TO_TIMESTAMP_LTZ(ts_ms, 3) AS TIMESTAMP(3))`` with the same
watermark; the job's ``table.local-time-zone`` is UTC, so ``ts`` equals ours), and no
"unthrottled" 0 for ``rows-per-second`` (the largest BIGINT instead, which never throttles).
Watermarks use Flink's default periodic interval (200 ms): Flink reads an interval of 0 as
"no periodic watermarks", which would hold every window until the end of the input.

    python benchmarks/flink_baseline.py [--events 2000000] [--parallelism 1,2]
        [--workloads filter,tumble,hop,group] [--markdown] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from streaming_throughput import KEYS, QUERIES, START_MS

FLINK_VERSION = "2.3.0"
ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv-flink"
JOB = Path(__file__).resolve().parent / "flink_job.py"
#: Flink's datagen takes a rate per second; the largest BIGINT never throttles
UNTHROTTLED = str(2**63 - 1)


@dataclass(frozen=True)
class Figure:
    """One timed job: ``events`` rows of ``workload`` over ``keys`` keys at ``parallelism``."""

    workload: str
    keys: int
    parallelism: int
    events: int
    events_per_s: float
    seconds: float
    peak_rss_mib: float
    #: the machine's 1-minute load average just before the job's process started
    load_before: float


def venv_python() -> Path:
    return VENV / "bin" / "python"


def installed_version() -> str | None:
    """The apache-flink version in ``.venv-flink``, or None when there is none."""
    if not venv_python().exists():
        return None
    done = subprocess.run(
        [str(venv_python()), "-c", "from pyflink.version import __version__; print(__version__)"],
        capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def ensure_venv(python: str) -> None:
    """Creates ``.venv-flink`` with ``python -m venv`` and installs the pinned apache-flink
    into it, unless that version is already there."""
    if installed_version() == FLINK_VERSION:
        return
    if not venv_python().exists():
        print(f"creating {VENV} ...", file=sys.stderr)
        subprocess.run([python, "-m", "venv", str(VENV)], check=True)
    print(f"installing apache-flink=={FLINK_VERSION} into {VENV} ...", file=sys.stderr)
    pip = [str(venv_python()), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, f"apache-flink=={FLINK_VERSION}"], check=True)


def source_ddl(name: str, events: int, keys: int) -> str:
    """Flink's form of our datagen source (see the module docstring for the differences)."""
    return f"""CREATE TABLE {name} (id BIGINT, k BIGINT, v BIGINT, ts_ms BIGINT,
                 ts AS CAST(TO_TIMESTAMP_LTZ(ts_ms, 3) AS TIMESTAMP(3)),
                 WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
               WITH ('connector' = 'datagen', 'rows-per-second' = '{UNTHROTTLED}',
                     'fields.id.kind' = 'sequence', 'fields.id.start' = '0',
                     'fields.id.end' = '{events - 1}',
                     'fields.ts_ms.kind' = 'sequence', 'fields.ts_ms.start' = '{START_MS}',
                     'fields.ts_ms.end' = '{START_MS + events - 1}',
                     'fields.k.min' = '0', 'fields.k.max' = '{keys - 1}',
                     'fields.v.min' = '0', 'fields.v.max' = '999')"""


def job_spec(workload: str, events: int, keys: int, parallelism: int) -> dict[str, object]:
    """The statements of one child: a warm-up job of the same query over 1,000 events and
    10 keys, then the source, the sink and the timed insert."""
    columns, query = QUERIES[workload]
    warm_query = query.replace("FROM src", "FROM warm").replace("TABLE src", "TABLE warm")
    return {
        "parallelism": parallelism,
        "events": events,
        "warm_up": [source_ddl("warm", 1000, 10),
                    f"CREATE TABLE warm_sink ({columns}) WITH ('connector' = 'blackhole')",
                    f"INSERT INTO warm_sink {warm_query}"],
        "setup": [source_ddl("src", events, keys),
                  f"CREATE TABLE sink ({columns}) WITH ('connector' = 'blackhole')"],
        "insert": f"INSERT INTO sink {query}",
    }


def run_child(spec: dict[str, object], timeout: float) -> dict[str, Any]:
    """Runs ``flink_job.py`` in the Flink venv on ``spec``; its last stdout line is JSON."""
    done = subprocess.run([str(venv_python()), str(JOB)], input=json.dumps(spec),
                          capture_output=True, text=True, check=False, timeout=timeout,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": ""})
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise SystemExit(f"Flink job failed ({done.returncode}): {done.stderr.strip()[-4000:]}")
    figures: dict[str, Any] = json.loads(lines[-1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--parallelism", default="1,2",
                        help="comma-separated parallelisms to run (default 1,2)")
    parser.add_argument("--workloads", default=",".join(QUERIES),
                        help=f"comma-separated subset of {', '.join(QUERIES)}")
    parser.add_argument("--keys", default=",".join(str(k) for k in KEYS),
                        help="comma-separated key counts (default 10000,1000000)")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write the figures as JSON to PATH")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter that creates .venv-flink (default: this one)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds one job's process may take before it is stopped")
    args = parser.parse_args(argv)
    levels = [int(p) for p in args.parallelism.split(",")]
    workloads = args.workloads.split(",")
    key_counts = [int(k) for k in args.keys.split(",")]
    unknown = set(workloads) - set(QUERIES)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")

    ensure_venv(args.python)
    started = time.perf_counter()
    results: list[Figure] = []
    version = FLINK_VERSION
    for workload in workloads:
        for keys in key_counts:
            for p in levels:
                load = os.getloadavg()[0]
                figures = run_child(job_spec(workload, args.events, keys, p), args.timeout)
                version = str(figures["flink_version"])
                row = Figure(workload, keys, p, args.events, float(figures["events_per_s"]),
                             float(figures["seconds"]), float(figures["peak_rss_mib"]), load)
                results.append(row)
                print(f"{workload:7s} keys={keys:>9,d} p{p}  {row.events_per_s / 1e6:6.2f} M "
                      f"events/s  {row.seconds:6.2f} s  peak RSS {row.peak_rss_mib:6.0f} MiB  "
                      f"load {load:.1f}",
                      file=sys.stderr)
    total = time.perf_counter() - started

    title = f"Apache Flink {version}, {args.events:,d} events per job"
    if args.markdown:
        print(f"{title}\n")
        print("| workload | keys | parallelism | events/s | seconds | peak RSS |")
        print("|---|---:|---:|---:|---:|---:|")
    else:
        print(title)
        print(f"{'workload':8s} {'keys':>9s} {'p':>2s} {'events/s':>12s} {'seconds':>8s} "
              f"{'RSS MiB':>8s}")
    for row in results:
        if args.markdown:
            print(f"| {row.workload} | {row.keys:,d} | {row.parallelism} | "
                  f"{row.events_per_s / 1e6:.2f} M | {row.seconds:.2f} | "
                  f"{row.peak_rss_mib:.0f} MiB |")
        else:
            print(f"{row.workload:8s} {row.keys:>9,d} {row.parallelism:>2d} "
                  f"{row.events_per_s:>12,.0f} {row.seconds:>8.2f} {row.peak_rss_mib:>8.0f}")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(
            {"engine": "apache-flink", "flink_version": version, "events": args.events,
             "cpus": os.cpu_count(), "wall_seconds": total,
             "results": [asdict(row) for row in results]}, indent=2)
            + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
