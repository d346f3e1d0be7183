"""One timed Apache Flink SQL job, run by ``benchmarks/flink_baseline.py`` in the Flink
virtual environment (``.venv-flink/bin/python``), never by flowsql's own interpreter.

Reads a JSON spec on standard input::

    {"parallelism": 2, "events": 2000000,
     "warm_up": ["CREATE TABLE warm ...", "CREATE TABLE warm_sink ...", "INSERT INTO ..."],
     "setup": ["CREATE TABLE src ...", "CREATE TABLE sink ..."],
     "insert": "INSERT INTO sink SELECT ..."}

Creates a streaming ``TableEnvironment`` (a local mini cluster inside the gateway JVM) with
``parallelism.default`` set, runs every ``warm_up`` statement (the last one a small job of
the same query, waited for, so the JVM has loaded and compiled the planner and operators
before the clock starts), runs ``setup``, then times ``execute_sql(insert).wait()``: from
job submission to the end of the job. Prints one JSON line on standard output: ``seconds``,
``events_per_s``, ``peak_rss_mib`` (summed RSS of this process and its children, the JVM
among them, sampled every 20 ms during the timed job) and ``flink_version``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from pyflink.table import EnvironmentSettings, TableEnvironment
from pyflink.version import __version__ as flink_version


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (the Flink gateway JVM is a child of this process)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(child) for child in listing.read().split()]
    except (OSError, ValueError):
        return []


class RssSampler:
    """Peak summed RSS of this process and its process tree, sampled every 20 ms."""

    def __init__(self) -> None:
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _tree(self) -> list[int]:
        pids, frontier = [os.getpid()], [os.getpid()]
        while frontier:
            frontier = [child for pid in frontier for child in _children(pid)]
            pids.extend(frontier)
        return pids

    def _sample(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, sum(_rss_bytes(pid) for pid in self._tree()))

    def stop(self) -> float:
        """The peak in MiB."""
        self._done.set()
        self._thread.join()
        return self.peak / 2**20


def run(spec: dict[str, object]) -> dict[str, object]:
    """Runs the spec's warm-up, setup and timed insert; returns the figures."""
    settings = EnvironmentSettings.in_streaming_mode()
    env = TableEnvironment.create(settings)
    config = env.get_config()
    config.set("parallelism.default", str(spec["parallelism"]))
    config.set("table.local-time-zone", "UTC")
    warm_up = spec["warm_up"]
    setup = spec["setup"]
    assert isinstance(warm_up, list) and isinstance(setup, list)
    for statement in warm_up[:-1]:
        env.execute_sql(statement)
    env.execute_sql(warm_up[-1]).wait()
    for statement in setup:
        env.execute_sql(statement)
    sampler = RssSampler()
    started = time.perf_counter()
    env.execute_sql(str(spec["insert"])).wait()
    seconds = time.perf_counter() - started
    peak = sampler.stop()
    events = int(str(spec["events"]))
    return {"seconds": seconds, "events_per_s": events / seconds, "peak_rss_mib": peak,
            "flink_version": flink_version}


def main() -> int:
    spec = json.loads(sys.stdin.read())
    print(json.dumps(run(spec)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
