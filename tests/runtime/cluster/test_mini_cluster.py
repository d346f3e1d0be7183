"""The mini-cluster with real worker processes and real sockets on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import numpy as np
import psutil
import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError, FlowSQLError
from flowsql.runtime.cluster import EdgeSpec, MiniCluster, TaskSpec
from flowsql.runtime.partitioning import DEFAULT_MAX_PARALLELISM, key_groups


def no_process_left(pids: list[int]) -> bool:
    """None of ``pids`` runs any more, and none of them is still our child (reaped)."""
    children = {child.pid for child in psutil.Process().children(recursive=True)}
    return all(gone(pid) and pid not in children for pid in pids)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(condition, seconds: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.fixture(scope="module")
def cluster() -> Iterator[MiniCluster]:
    with MiniCluster(2) as running:
        yield running
    assert no_process_left(running.pids)


def test_a_generator_feeds_a_sink_on_another_worker(cluster: MiniCluster) -> None:
    results = cluster.run([TaskSpec("gen", "generate", config={"batches": 40, "rows": 500},
                                    worker=0),
                           TaskSpec("sink", "count", worker=1)],
                          [EdgeSpec("gen[0]", "sink[0]")],
                          settings={"execution.buffer-timeout": "10"}, timeout=60)
    n = 40 * 500
    assert results == {"gen[0]": {"rows": n}, "sink[0]": {"rows": n, "sum": n * (n - 1) // 2}}


def test_a_hash_shuffle_between_two_generators_and_two_sinks(cluster: MiniCluster) -> None:
    tasks = [TaskSpec("gen", "generate", subtask=s, config={"batches": 10, "rows": 300,
                                                            "offset": s * 10**6})
             for s in range(2)]
    tasks += [TaskSpec("sink", "count", subtask=s) for s in range(2)]
    edges = [EdgeSpec(f"gen[{g}]", f"sink[{s}]") for g in range(2) for s in range(2)]
    results = cluster.run(tasks, edges, settings={"execution.buffer-timeout": "0",
                                                  "execution.channel-credits": "2"}, timeout=60)
    values = np.concatenate([np.arange(s * 10**6, s * 10**6 + 3000) for s in range(2)])
    owner = key_groups([pa.array(values)], DEFAULT_MAX_PARALLELISM) * 2 // DEFAULT_MAX_PARALLELISM
    for s in range(2):
        mine = values[owner == s]
        assert results[f"sink[{s}]"] == {"rows": len(mine), "sum": int(mine.sum())}


def test_a_failing_task_fails_the_job_with_its_name(cluster: MiniCluster) -> None:
    started = time.monotonic()
    job = cluster.submit([TaskSpec("gen", "generate", config={"batches": -1, "rows": 10,
                                                              "sleep_ms": 5}),
                          TaskSpec("parse", "fail", subtask=3,
                                   config={"message": "bad input line 7", "delay_ms": 200}),
                          TaskSpec("sink", "count")],
                         [EdgeSpec("gen[0]", "sink[0]"), EdgeSpec("parse[3]", "sink[0]")])
    with pytest.raises(ExecutionError, match=r"task parse\[3\] .*ValueError: bad input line 7"):
        job.result(timeout=60)
    assert time.monotonic() - started < 30
    assert job.wait_terminated(30)  # the rest of the job was cancelled, not left running


def test_cancel_stops_a_running_job_and_the_cluster_stays_usable(cluster: MiniCluster) -> None:
    job = cluster.submit([TaskSpec("gen", "generate", config={"batches": -1, "rows": 100}),
                          TaskSpec("sink", "count")], [EdgeSpec("gen[0]", "sink[0]")])
    time.sleep(0.3)
    job.cancel()
    with pytest.raises(ExecutionError, match="cancelled"):
        job.result(timeout=30)
    assert job.wait_terminated(30)
    again = cluster.run([TaskSpec("gen", "generate", config={"batches": 2, "rows": 5}),
                         TaskSpec("sink", "count")], [EdgeSpec("gen[0]", "sink[0]")], timeout=60)
    assert again["sink[0]"] == {"rows": 10, "sum": 45}


def test_invalid_jobs_are_rejected_before_deployment(cluster: MiniCluster) -> None:
    with pytest.raises(ExecutionError, match="unknown task kind 'nope'"):
        cluster.submit([TaskSpec("t", "nope")])
    with pytest.raises(ExecutionError, match="worker 5"):
        cluster.submit([TaskSpec("t", "count", worker=5)])
    with pytest.raises(ExecutionError, match="unknown task ghost"):
        cluster.submit([TaskSpec("t", "count")], [EdgeSpec("ghost[0]", "t[0]")])
    with pytest.raises(FlowSQLError, match="execution.buffer-timeout"):
        cluster.submit([TaskSpec("t", "count")], settings={"execution.buffer-timeout": "x"})
    job = cluster.submit([TaskSpec("t", "no.such.module:run")])
    with pytest.raises(ExecutionError, match=r"task t\[0\].*does not resolve"):
        job.result(timeout=30)


def test_a_killed_worker_fails_the_job_within_seconds() -> None:
    with MiniCluster(2) as cluster:
        job = cluster.submit([TaskSpec("gen", "generate", config={"batches": -1, "rows": 100,
                                                                  "sleep_ms": 2}, worker=0),
                              TaskSpec("sink", "count", worker=1)],
                             [EdgeSpec("gen[0]", "sink[0]")])
        time.sleep(0.5)
        os.kill(cluster.pids[1], signal.SIGKILL)
        started = time.monotonic()
        with pytest.raises(ExecutionError, match=r"worker 1 \(pid \d+\) was lost \(killed by "
                                                 r"SIGKILL\)"):
            job.result(timeout=30)
        assert time.monotonic() - started < 20
        with pytest.raises(ExecutionError, match="start a new cluster"):
            cluster.submit([TaskSpec("t", "count")])
        pids = cluster.pids
    assert no_process_left(pids)


def test_workers_exit_when_the_coordinator_process_dies() -> None:
    script = textwrap.dedent("""
        import time
        from flowsql.runtime.cluster import MiniCluster
        cluster = MiniCluster(2)
        print(*cluster.pids, flush=True)
        time.sleep(600)
    """)
    coordinator = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                                   text=True)
    try:
        assert coordinator.stdout is not None
        pids = [int(p) for p in coordinator.stdout.readline().split()]
        assert len(pids) == 2 and not any(gone(pid) for pid in pids)
    finally:
        coordinator.kill()
        coordinator.communicate(timeout=30)  # reaps it and closes the pipe
    assert wait_until(lambda: all(gone(pid) for pid in pids), 20)


def test_a_hung_worker_is_detected_by_missing_heartbeats() -> None:
    with MiniCluster(1, heartbeat_timeout=3.0) as cluster:
        job = cluster.submit([TaskSpec("gen", "generate", config={"batches": -1, "rows": 10,
                                                                  "sleep_ms": 5}),
                              TaskSpec("sink", "count")], [EdgeSpec("gen[0]", "sink[0]")])
        time.sleep(0.3)
        os.kill(cluster.pids[0], signal.SIGSTOP)  # alive, connected, and silent
        with pytest.raises(ExecutionError, match=r"worker 0 .* lost \(no heartbeat for 3.0 s\)"):
            job.result(timeout=30)
        pids = cluster.pids
    assert no_process_left(pids)
