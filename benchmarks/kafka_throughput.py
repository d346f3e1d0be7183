"""Kafka source throughput: a topic of small JSON events read by the client alone and by
flowsql queries, events per second, peak RSS, and the end-to-end latency at half rate.

Steps (each printed as it starts):

1. A dev broker (``tests/harness/kafka_broker.py``: ``tansu``, memory-only, on loopback)
   with a topic of two partitions, filled with N JSON events as fast as the client
   produces them (payloads encoded before the clock runs, large ``linger.ms`` batches):
   ``{"id": i, "user": i % 1000, "amount": (i % 100) + (i % 97) / 100, "ts": ...}``, event
   time rising 0.1 ms per event, event i in partition i % 2.
2. The client alone (the baseline): a confluent-kafka Consumer reads all N records
   (``consume(10000)`` in a loop, touching each value, until the N-th record), in a fresh
   process.
3. flowsql, each configuration in a fresh process (its own peak RSS; at parallelism 2 the
   sum over the session process and its workers), a bounded streaming read (earliest to
   latest offset), events/s = N / the job's wall time: ``filter`` (WHERE amount > 10 into
   a blackhole table), ``tumble`` (the filter and a TUMBLE 1 s count/sum per user into a
   blackhole table) and ``tumble-kafka`` (the same into a Kafka topic, at-least-once), at
   parallelism 1 and 2, without and with 1 s checkpoints. A tiny job on another topic runs
   first in every process, so imports and worker processes are ready before the clock
   starts.
4. Latency: the filter at parallelism 1 streamed to its process (``Result.stream()``,
   ``execution.buffer-timeout`` 10 ms) while this process produces events at half of the
   filter's rate of step 3, each record stamped with its send time; a row's latency is its
   arrival minus its record timestamp (the ``timestamp`` metadata column), so it includes
   the producer's linger (1 ms) and the broker. The first tenth of the rows is left out
   (warm-up). The client alone is measured the same way at the same rate (a bare Consumer
   in a child process): what the broker and the client cost without flowsql.

Client and tables use the same client properties (``CLIENT``): a deep prefetch queue and a
short fetch wait, without which this broker answers the client's fetches too slowly for
either to show its own cost.

    python benchmarks/kafka_throughput.py [--events 10000000] [--parallelism 1,2]
        [--workloads filter,tumble,tumble-kafka] [--checkpoints off,on]
        [--latency-seconds 10] [--repeat 1] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from streaming_throughput import RssSampler, in_child

import flowsql

TOPIC = "events"
WARM_TOPIC = "warm"
LATENCY_TOPIC = "latency"
PARTITIONS = 2
WARM_EVENTS = 2_000
#: client properties of the baseline consumer and of every Kafka table
CLIENT = {"queued.min.messages": "1000000", "fetch.wait.max.ms": "10"}
PRODUCER = {"linger.ms": 200, "batch.num.messages": 100_000, "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_097_151,
            "acks": 1, "enable.idempotence": False}
WORKLOADS = ("filter", "tumble", "tumble-kafka")
FILTER = "amount > 10"
EVENT_COLUMNS = "id BIGINT, `user` BIGINT, amount DOUBLE, ts TIMESTAMP(3)"
WINDOW_COLUMNS = ("`user` BIGINT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), "
                  "c BIGINT, s DOUBLE")
QUERIES = {
    "filter": (EVENT_COLUMNS, f"SELECT * FROM {{table}} WHERE {FILTER}"),
    "tumble": (WINDOW_COLUMNS,
               "SELECT `user`, window_start, window_end, COUNT(*), SUM(amount) FROM TABLE("
               "TUMBLE(TABLE {table}, DESCRIPTOR(ts), INTERVAL '1' SECOND)) "
               f"WHERE {FILTER} GROUP BY `user`, window_start, window_end"),
}
QUERIES["tumble-kafka"] = QUERIES["tumble"]


# -- events ----------------------------------------------------------------------------------
def payloads(start: int, stop: int) -> list[bytes]:
    """The JSON values of events ``start`` .. ``stop - 1`` (see the module docstring)."""
    out = []
    for i in range(start, stop):
        seconds, millis = divmod(i // 10, 1000)
        out.append(b'{"id": %d, "user": %d, "amount": %d.%02d, '
                   b'"ts": "2024-01-01 %02d:%02d:%02d.%03d"}'
                   % (i, i % 1000, i % 100, i % 97, seconds // 3600 % 24, seconds // 60 % 60,
                      seconds % 60, millis))
    return out


def passing_filter(events: int) -> int:
    """How many of events 0 .. ``events - 1`` have amount > 10."""
    ids = np.arange(events)
    return int(((ids % 100 > 10) | ((ids % 100 == 10) & (ids % 97 > 0))).sum())


def producer(bootstrap: str, **overrides: Any) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, **PRODUCER, **overrides})


def send(client: Any, topic: str, values: list[bytes], first: int,
         timestamp: int | None = None) -> None:
    """Queue ``values`` (event ``first`` onwards, event i into partition i % 2), waiting
    for room in the client's queue when it is full."""
    for offset, value in enumerate(values, first):
        while True:
            try:
                if timestamp is None:
                    client.produce(topic, value, partition=offset % PARTITIONS)
                else:
                    client.produce(topic, value, partition=offset % PARTITIONS,
                                   timestamp=timestamp)
                break
            except BufferError:
                client.poll(0.005)


def fill(bootstrap: str, topic: str, events: int) -> float:
    """Produce ``events`` events into ``topic``; the seconds spent producing (encoding the
    payloads, 200 thousand at a time, is not counted)."""
    client = producer(bootstrap)
    chunk = 200_000
    producing = 0.0
    for start in range(0, events, chunk):
        values = payloads(start, min(events, start + chunk))
        started = time.perf_counter()
        send(client, topic, values, start)
        client.poll(0)
        producing += time.perf_counter() - started
    started = time.perf_counter()
    remaining = client.flush(120)
    producing += time.perf_counter() - started
    if remaining:
        raise SystemExit(f"{remaining} events were not delivered to {topic}")
    return producing


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    from tests.harness.kafka_broker import create_topic as create

    create(bootstrap, name, partitions)


# -- the client alone ------------------------------------------------------------------------
def client_read(bootstrap: str, events: int) -> dict[str, float]:
    """Read every record of the events topic with a bare Consumer: seconds, events/s.
    It stops at the ``events``-th record: it knows the count, so (unlike a bounded scan)
    it waits for no end-of-partition event, and a last ``consume`` short of 10000 records
    does not wait out its timeout."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-client",
                         "enable.auto.commit": False, **CLIENT})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    read = 0
    started = time.perf_counter()
    deadline = time.monotonic() + 600
    while read < events:
        for message in consumer.consume(min(10_000, events - read), 1.0):
            error = message.error()
            if error is not None:
                raise SystemExit(f"reading {TOPIC}: {error}")
            message.value()
            read += 1
        if time.monotonic() > deadline:
            raise SystemExit(f"the client read {read} records, expected {events}")
    seconds = time.perf_counter() - started
    consumer.close()
    return {"seconds": seconds, "events_per_s": events / seconds,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# -- flowsql ---------------------------------------------------------------------------------
def kafka_options(bootstrap: str, topic: str) -> str:
    client = ", ".join(f"'properties.{k}' = '{v}'" for k, v in CLIENT.items())
    return (f"'connector' = 'kafka', 'topic' = '{topic}', 'format' = 'json', "
            f"'properties.bootstrap.servers' = '{bootstrap}', {client}")


def source_ddl(name: str, bootstrap: str, topic: str) -> str:
    return f"""CREATE TABLE {name} ({EVENT_COLUMNS},
                 WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
               WITH ({kafka_options(bootstrap, topic)},
                     'scan.startup.mode' = 'earliest-offset',
                     'scan.bounded.mode' = 'latest-offset')"""


def sink_ddl(name: str, workload: str, bootstrap: str) -> str:
    columns = QUERIES[workload][0]
    if workload != "tumble-kafka":
        return f"CREATE TABLE {name} ({columns}) WITH ('connector' = 'blackhole')"
    create_topic(bootstrap, name)
    return f"""CREATE TABLE {name} ({columns})
               WITH ({kafka_options(bootstrap, name)},
                     'sink.delivery-guarantee' = 'at-least-once')"""


def run_one(bootstrap: str, workload: str, parallelism: int, checkpoints: bool,
            events: int) -> dict[str, float]:
    """One job in this process: seconds, events/s, rows written, peak RSS."""
    directory = tempfile.mkdtemp(prefix="flowsql-bench-kafka-")
    try:
        session = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                     "parallelism.default": str(parallelism)})
        query = QUERIES[workload][1]
        tag = f"{workload.replace('-', '_')}_p{parallelism}_{'cp' if checkpoints else 'nocp'}"
        session.sql(source_ddl("warm", bootstrap, WARM_TOPIC))
        session.sql(sink_ddl(f"warm_{tag}", workload, bootstrap))
        session.sql(f"INSERT INTO warm_{tag} {query.format(table='warm')}").job.wait()
        if checkpoints:
            session.sql("SET 'execution.checkpointing.interval' = '1 s'")
            session.sql(f"SET 'execution.checkpointing.dir' = '{directory}'")
        session.sql(source_ddl("events", bootstrap, TOPIC))
        session.sql(sink_ddl(f"out_{tag}", workload, bootstrap))
        sampler = RssSampler(session)
        started = time.perf_counter()
        job = session.sql(f"INSERT INTO out_{tag} {query.format(table='events')}").job
        job.wait()
        seconds = time.perf_counter() - started
        peak = sampler.stop()
        written = next((m.get("records_written", m["records_in"]) for m in job.metrics()
                        if m["operator"].startswith("SinkExec")), 0)
        summary = (job.checkpoint_summary() or {}) if checkpoints else {}
        session.close()
        return {"seconds": seconds, "events_per_s": events / seconds, "rows_out": written,
                "peak_rss_mib": peak, "checkpoints": summary.get("checkpoints_completed", 0)}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# -- latency ---------------------------------------------------------------------------------
def latency_child(bootstrap: str, topic: str, expected: int) -> dict[str, float]:
    """Stream the filter over ``topic`` (unbounded) until ``expected`` rows came;
    per row, arrival minus record timestamp in ms. Prints "ready" when the producer may
    start."""
    session = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                 "parallelism.default": "1",
                                 "execution.buffer-timeout": "10"})
    session.sql(source_ddl("warm", bootstrap, WARM_TOPIC))
    session.sql(QUERIES["filter"][1].format(table="warm")).to_arrow()
    session.sql(f"""CREATE TABLE lat ({EVENT_COLUMNS},
                      kts TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL)
                    WITH ({kafka_options(bootstrap, topic)},
                          'scan.startup.mode' = 'earliest-offset')""")
    stream = session.sql(f"SELECT id, kts FROM lat WHERE {FILTER}").stream()
    print("ready", flush=True)
    lags: list[np.ndarray] = []
    rows = 0
    for batch in stream:
        arrived_ms = time.time() * 1000.0
        stamps = batch.column(2).cast("int64").to_numpy()
        lags.append(arrived_ms - stamps)
        rows += batch.num_rows
        if rows >= expected:
            break
    stream.close()  # type: ignore[attr-defined]
    session.close()
    return _percentiles(lags, rows)


def client_latency_child(bootstrap: str, topic: str, expected: int) -> dict[str, float]:
    """The same measure for the client alone: a Consumer polling ``topic`` until
    ``expected`` records came; per record, arrival minus record timestamp in ms."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency",
                         "enable.auto.commit": False, **CLIENT})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    consumer.consume(1, 1.0)  # connected and fetching before the producer starts
    print("ready", flush=True)
    lags: list[np.ndarray] = []
    rows = 0
    while rows < expected:
        messages = consumer.consume(10_000, 0.01)
        arrived_ms = time.time() * 1000.0
        stamps = np.fromiter((m.timestamp()[1] for m in messages), dtype=np.int64,
                             count=len(messages))
        lags.append(arrived_ms - stamps)
        rows += len(messages)
    consumer.close()
    return _percentiles(lags, rows)


def _percentiles(lags: list[np.ndarray], rows: int) -> dict[str, float]:
    """p50, p99 and max of the latencies after the first tenth (the warm-up)."""
    everything = np.concatenate(lags)
    warm = everything[everything.size // 10:]
    return {"rows": rows, "p50_ms": float(np.percentile(warm, 50)),
            "p99_ms": float(np.percentile(warm, 99)), "max_ms": float(warm.max())}


def latency(bootstrap: str, rate: int, seconds: float, topic: str,
            reader: str = "flowsql") -> dict[str, float]:
    """Produce ``rate`` events/s for ``seconds`` into a new ``topic`` from a thread of this
    process while a child process reads them (``reader``: ``flowsql``, the filter streamed
    to its process, or ``client``, a bare Consumer); the child's latency figures."""
    create_topic(bootstrap, topic)
    events = int(rate * seconds)
    expected = passing_filter(events) if reader == "flowsql" else events
    child = subprocess.Popen(
        [sys.executable, __file__, "--latency-child", bootstrap, topic, str(expected),
         reader], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    if child.stdout.readline().strip() != "ready":
        child.kill()
        raise SystemExit("the latency child did not start")
    thread = threading.Thread(target=_produce_at, args=(bootstrap, topic, rate, events),
                              daemon=True)
    thread.start()
    try:
        out, _ = child.communicate(timeout=seconds + 120)
    except subprocess.TimeoutExpired:
        child.kill()
        raise SystemExit("the latency child did not receive every row in time") from None
    thread.join()
    if child.returncode != 0:
        raise SystemExit("the latency child failed")
    return {"rate": rate, **json.loads(out.strip().splitlines()[-1])}


def _produce_at(bootstrap: str, topic: str, rate: int, events: int) -> None:
    """Produce ``events`` events at ``rate`` per second, every record stamped with the
    wall-clock millisecond it is handed to the client."""
    client = producer(bootstrap, **{"linger.ms": 1})
    values = payloads(0, events)
    sent = 0
    started = time.perf_counter()
    while sent < events:
        due = min(events, int((time.perf_counter() - started) * rate))
        if due > sent:
            send(client, topic, values[sent:due], sent, int(time.time() * 1000))
            sent = due
        client.poll(0)
        time.sleep(0.001)
    client.flush(30)


# -- driver ----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--parallelism", default="1,2",
                        help="comma-separated parallelisms (default 1,2)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"comma-separated subset of {', '.join(WORKLOADS)}")
    parser.add_argument("--checkpoints", default="off,on",
                        help="off, on or both (default off,on)")
    parser.add_argument("--latency-seconds", type=float, default=10.0,
                        help="how long the latency run produces (0: no latency run)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each measurement; the median run is reported")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--client-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--latency-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client_child:
        print(json.dumps(client_read(args.client_child[0], int(args.client_child[1]))))
        return 0
    if args.child:
        bootstrap, workload, parallelism, checkpoints, events = args.child
        print(json.dumps(run_one(bootstrap, workload, int(parallelism), checkpoints == "on",
                                 int(events))))
        return 0
    if args.latency_child:
        bootstrap, topic, expected, reader = args.latency_child
        measure = latency_child if reader == "flowsql" else client_latency_child
        print(json.dumps(measure(bootstrap, topic, int(expected))))
        return 0

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.harness.kafka_broker import DevBroker

    levels = [int(p) for p in args.parallelism.split(",")]
    workloads = args.workloads.split(",")
    modes = args.checkpoints.split(",")
    events = args.events
    say(f"starting the dev broker; topic '{TOPIC}' with {PARTITIONS} partitions")
    with DevBroker() as broker:
        bootstrap = broker.bootstrap
        broker.create_topic(TOPIC, PARTITIONS)
        broker.create_topic(WARM_TOPIC, PARTITIONS)
        fill(bootstrap, WARM_TOPIC, WARM_EVENTS)
        say(f"producing {events:,d} JSON events")
        producing = fill(bootstrap, TOPIC, events)
        say(f"  produced at {events / producing / 1e6:.2f} M events/s ({producing:.1f} s)")
        say("reading them with the client alone (confluent-kafka Consumer)")
        client = median_run(["--client-child", bootstrap, str(events)], args.repeat)
        say(f"  {client['events_per_s'] / 1e6:.2f} M events/s ({client['seconds']:.1f} s)")
        rows: list[tuple[str, dict[str, float]]] = []
        for workload in workloads:
            for p in levels:
                for mode in modes:
                    label = f"{workload} p{p} checkpoints {mode}"
                    say(f"running {label}")
                    figures = median_run(["--child", bootstrap, workload, str(p), mode,
                                          str(events)], args.repeat)
                    say(f"  {figures['events_per_s'] / 1e6:.2f} M events/s "
                        f"({figures['seconds']:.1f} s, rows out {int(figures['rows_out']):,d}, "
                        f"checkpoints {int(figures['checkpoints'])}, peak RSS "
                        f"{figures['peak_rss_mib']:.0f} MiB)")
                    rows.append((label, figures))
        figures_by_label = dict(rows)
        latencies: dict[str, dict[str, float]] = {}
        base = figures_by_label.get("filter p1 checkpoints off")
        if args.latency_seconds > 0 and base is not None:
            rate = int(base["events_per_s"] / 2)
            for reader, what in (("flowsql", "the filter streamed to its process"),
                                 ("client", "the client alone reading them")):
                say(f"latency: producing {rate:,d} events/s for {args.latency_seconds:.0f} "
                    f"s, {what}")
                latencies[reader] = latency(bootstrap, rate, args.latency_seconds,
                                            f"{LATENCY_TOPIC}_{reader}", reader)
    report(events, producing, client, rows, latencies, args.markdown)
    return 0


def median_run(child_args: list[str], repeat: int) -> dict[str, float]:
    """Run a measurement ``repeat`` times, each in a fresh process; the run with the median
    rate (the machine is shared: one run can be unlucky)."""
    runs = sorted((in_child(child_args, __file__) for _ in range(max(1, repeat))),
                  key=lambda figures: figures["events_per_s"])
    return runs[(len(runs) - 1) // 2]


def report(events: int, producing: float, client: dict[str, float],
           rows: list[tuple[str, dict[str, float]]],
           latencies: dict[str, dict[str, float]], markdown: bool) -> None:
    rate = client["events_per_s"]
    print(f"\n{events:,d} events; produced at {events / producing / 1e6:.2f} M events/s; "
          f"the client alone reads {rate / 1e6:.2f} M events/s "
          f"(peak RSS {client['peak_rss_mib']:.0f} MiB)")
    if markdown:
        print("\n| configuration | events/s | ratio to client | peak RSS |")
        print("|---|---:|---:|---:|")
    for label, figures in rows:
        cells = [label, f"{figures['events_per_s'] / 1e6:.2f} M",
                 f"{figures['events_per_s'] / rate:.2f}", f"{figures['peak_rss_mib']:.0f} MiB"]
        if markdown:
            print("| " + " | ".join(cells) + " |")
        else:
            print(f"{cells[0]:34s} {cells[1]:>10s}  ratio {cells[2]:>5s}  RSS {cells[3]}")
    base = dict(rows).get("filter p1 checkpoints off")
    if base is not None:
        ratio = base["events_per_s"] / rate
        print(f"\ntarget: filter >= 0.5 x client; measured {ratio:.2f} x client "
              f"({'met' if ratio >= 0.5 else 'NOT met'})")
    for reader, what in (("flowsql", "the filter at p1, produce to sink"),
                         ("client", "the client alone, produce to consume")):
        lat = latencies.get(reader)
        if lat is not None:
            print(f"latency of {what}, at {lat['rate'] / 1e6:.2f} M events/s (half the "
                  f"filter's rate): p50 {lat['p50_ms']:.1f} ms, p99 {lat['p99_ms']:.1f} ms, "
                  f"max {lat['max_ms']:.1f} ms ({int(lat['rows']):,d} rows)")


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
