"""Task kinds of the throughput/latency benchmark (benchmarks/buffer_timeout_latency.py).

The job is the grep-like pipeline of the buffer-timeout experiment: a source stamps every
event with its creation time, a filter chained into the source keeps the matching events,
and a rebalance exchange sends the survivors over remote channels to latency sinks. Only
the channels and their output buffers sit between creation and measurement, so the sinks
see what the buffer timeout costs in latency and buys in throughput.

Clocks: creation and arrival are both ``time.time_ns()`` (CLOCK_REALTIME), which every
process on one machine shares, so ``arrival - creation`` is an end-to-end latency across
worker processes. The measured window is given as absolute times in the same clock; events
created before it (warm-up, connection set-up) are forwarded but not measured.

Latencies go into a log-scaled histogram (``HISTOGRAM_STEPS`` buckets per doubling, about
2 % wide) filled per batch with ``np.bincount``: no per-event Python, a JSON-able result of
a few hundred numbers whatever the event count, and histograms of several sinks add up.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.runtime.cluster.tasks import TaskContext

#: histogram buckets per doubling of the latency (in microseconds)
HISTOGRAM_STEPS = 32
#: latencies from 1 us to 2**HISTOGRAM_OCTAVES us (about 19 hours) keep their own bucket
HISTOGRAM_OCTAVES = 36
#: how often a sink waiting for input checks whether it was cancelled
_POLL_S = 0.2


def grep_source(context: TaskContext) -> Mapping[str, Any]:
    """Generate ``batch_rows``-event batches until ``stop_ns``, keep the events whose ``seq``
    is not a multiple of ``drop_every`` (the filter), and send each filtered batch to the
    next output in turn (rebalance; round-robin by batch, since per-event round-robin
    would only cut batches smaller).

    ``rate`` paces this subtask to that many events per second (0: as fast as the
    channels take them); a paced source that falls behind catches up, like a real stream
    whose events keep arriving while it is stalled. The result counts what was created and
    what passed the filter inside the measured window ``[measure_from_ns, stop_ns)``.
    """
    rows = int(context.config["batch_rows"])
    drop_every = int(context.config.get("drop_every", 10))
    if drop_every < 2:
        raise ExecutionError(f"drop_every must be at least 2, got {drop_every}")
    measure_from, stop = int(context.config["measure_from_ns"]), int(context.config["stop_ns"])
    rate = float(context.config.get("rate", 0))
    interval_ns = int(rows / rate * 1e9) if rate > 0 else 0
    offset = np.arange(rows, dtype=np.int64)
    first_seq = int(context.config.get("first_seq", 0))
    created = emitted = batches = 0
    due = time.time_ns()
    while not context.cancelled.is_set():
        now = time.time_ns()
        if interval_ns and due > now:
            time.sleep((due - now) / 1e9)
            now = time.time_ns()
        if now >= stop:
            break
        # a paced batch is stamped when it was due, so time spent behind schedule (stalled
        # by back-pressure) counts as latency instead of silently thinning the load
        created_ns = due if interval_ns else now
        due += interval_ns
        seq = pa.array(offset + (first_seq + batches * rows))
        batch = pa.record_batch({"created_ns": pa.array(np.full(rows, created_ns,
                                                                dtype=np.int64)),
                                 "seq": seq})
        kept = batch.filter(pc.not_equal(pc.modulo(seq, drop_every), 0))
        context.outputs[batches % len(context.outputs)].write(kept)
        batches += 1
        if created_ns >= measure_from:
            created += rows
            emitted += kept.num_rows
    return {"created": created, "emitted": emitted}


def latency_sink(context: TaskContext) -> Mapping[str, Any]:
    """Read every input to its end; for the events created in the measured window, count
    them, sum their ``seq`` (a checksum) and histogram their end-to-end latency."""
    measure_from = int(context.config["measure_from_ns"])
    histogram = np.zeros(HISTOGRAM_STEPS * HISTOGRAM_OCTAVES + 1, dtype=np.int64)
    events = seq_sum = 0
    while not context.inputs.finished and not context.cancelled.is_set():
        item = context.inputs.next(timeout=_POLL_S)
        if item is None or not isinstance(item[1], pa.RecordBatch):
            continue
        arrived = time.time_ns()
        created = item[1].column("created_ns").to_numpy()
        measured = created >= measure_from
        if not measured.all():
            created = created[measured]
        histogram += np.bincount(latency_buckets(arrived - created), minlength=len(histogram))
        events += len(created)
        seq_sum += int(item[1].column("seq").to_numpy()[measured].sum())
    return {"events": events, "seq_sum": seq_sum,
            "histogram": [[int(b), int(histogram[b])] for b in np.flatnonzero(histogram)]}


def latency_buckets(latency_ns: np.ndarray) -> np.ndarray:
    """The histogram bucket of each latency: ``floor(log2(us) * HISTOGRAM_STEPS)``, clamped
    to the histogram (sub-microsecond and negative latencies share bucket 0)."""
    micros = np.maximum(latency_ns / 1000, 1.0)
    buckets = np.floor(np.log2(micros) * HISTOGRAM_STEPS).astype(np.int64)
    return np.minimum(buckets, HISTOGRAM_STEPS * HISTOGRAM_OCTAVES)


def latency_percentile_ms(histogram: Sequence[Sequence[int]], quantile: float) -> float:
    """The ``quantile`` (0..1) latency in ms of a ``latency_sink`` histogram (or the sum of
    several: repeated buckets add up), as the geometric middle of its bucket."""
    counts: dict[int, int] = {}
    for bucket, count in histogram:
        counts[bucket] = counts.get(bucket, 0) + count
    if not counts:
        return float("nan")
    buckets = np.array(sorted(counts), dtype=np.int64)
    cumulative = np.cumsum([counts[b] for b in buckets])
    rank = quantile * cumulative[-1]
    bucket = int(buckets[min(np.searchsorted(cumulative, rank), len(buckets) - 1)])
    return float(2 ** ((bucket + 0.5) / HISTOGRAM_STEPS) / 1000)
