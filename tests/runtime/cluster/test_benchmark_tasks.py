"""The buffer-timeout benchmark's task kinds: the latency histogram, and a short grep job on
a real two-worker cluster whose sinks must receive exactly the filtered events."""

from __future__ import annotations

import time

import numpy as np
import pytest

from flowsql.errors import ExecutionError
from flowsql.runtime.cluster import EdgeSpec, MiniCluster, TaskSpec
from flowsql.runtime.cluster.benchmark_tasks import (
    HISTOGRAM_OCTAVES,
    HISTOGRAM_STEPS,
    latency_buckets,
    latency_percentile_ms,
)


def histogram_of(latency_ns: np.ndarray) -> list[list[int]]:
    counts = np.bincount(latency_buckets(latency_ns))
    return [[int(b), int(counts[b])] for b in np.flatnonzero(counts)]


def test_percentiles_of_the_histogram_are_within_a_bucket() -> None:
    latencies = np.array([1_000_000] * 90 + [100_000_000] * 10, dtype=np.int64)  # 1 / 100 ms
    histogram = histogram_of(latencies)
    assert latency_percentile_ms(histogram, 0.5) == pytest.approx(1.0, rel=0.03)
    assert latency_percentile_ms(histogram, 0.99) == pytest.approx(100.0, rel=0.03)
    # histograms of several sinks add up, bucket by bucket
    merged = histogram + histogram_of(np.full(200, 100_000_000, dtype=np.int64))
    assert latency_percentile_ms(merged, 0.5) == pytest.approx(100.0, rel=0.03)
    assert np.isnan(latency_percentile_ms([], 0.5))


def test_out_of_range_latencies_are_clamped_into_the_histogram() -> None:
    buckets = latency_buckets(np.array([-5, 0, 999, 2**62], dtype=np.int64))
    assert buckets.tolist() == [0, 0, 0, HISTOGRAM_STEPS * HISTOGRAM_OCTAVES]


def grep_job(window: dict[str, int], rate: float, drop_every: int
             ) -> tuple[list[TaskSpec], list[EdgeSpec]]:
    tasks = [TaskSpec("source", "grep_source", subtask=s, worker=s,
                      config={**window, "batch_rows": 100, "drop_every": drop_every,
                              "rate": rate, "first_seq": s << 40}) for s in range(2)]
    tasks += [TaskSpec("sink", "latency_sink", subtask=s, worker=1 - s, config=window)
              for s in range(2)]
    edges = [EdgeSpec(f"source[{s}]", f"sink[{k}]") for s in range(2) for k in range(2)]
    return tasks, edges


def test_a_grep_job_delivers_exactly_the_filtered_events_with_their_latency() -> None:
    with MiniCluster(2) as cluster:
        window = {"measure_from_ns": 0, "stop_ns": time.time_ns() + 300_000_000}  # all events
        results = cluster.run(*grep_job(window, rate=0, drop_every=3),
                              settings={"execution.buffer-timeout": "5"}, timeout=60)
        paced = {"measure_from_ns": 0, "stop_ns": time.time_ns() + 500_000_000}
        throttled = cluster.run(*grep_job(paced, rate=20_000, drop_every=3),
                                settings={"execution.buffer-timeout": "0"}, timeout=60)
        with pytest.raises(ExecutionError, match="drop_every must be at least 2"):
            cluster.run(*grep_job(window, rate=0, drop_every=1), timeout=60)

    expected_events = expected_sum = 0
    for s in range(2):
        created = results[f"source[{s}]"]["created"]
        seq = (s << 40) + np.arange(created, dtype=np.int64)
        kept = seq[seq % 3 != 0]
        assert created > 0 and results[f"source[{s}]"]["emitted"] == len(kept)
        expected_events += len(kept)
        expected_sum += int(kept.sum())
    sinks = [results[f"sink[{s}]"] for s in range(2)]
    assert sum(sink["events"] for sink in sinks) == expected_events
    assert sum(sink["seq_sum"] for sink in sinks) == expected_sum
    histogram = [pair for sink in sinks for pair in sink["histogram"]]
    assert sum(count for _, count in histogram) == expected_events
    assert 0 < latency_percentile_ms(histogram, 0.5) <= latency_percentile_ms(histogram, 1.0)
    assert latency_percentile_ms(histogram, 1.0) < 5_000
    # pacing never runs ahead of the rate: 20k events/s for at most 0.5 s, plus one batch
    for s in range(2):
        assert 0 < throttled[f"source[{s}]"]["created"] <= 10_000 + 100
