"""Calibrate the local engine's cost constants on this machine and write them to
``flowsql/optimizer/cost/constants.json`` (the ``local`` entry; ``spark`` is kept).

Each constant is measured by timing our operators on synthetic Parquet data (N rows of
an int64 key, an int64 value, a float64 and a string) through the SQL path, and
subtracting the cheaper query it extends: a scan, a filter over the scan, a hash join, a
hash aggregate, a sort, a window, a nested-loop join over a small input. The network
constant is what a hash exchange adds to a query at parallelism 2 beyond half its work at
parallelism 1, per byte a subtask receives; the spill constant times writing a batch to a
file and reading it back; the fixed cost of a parallel job is a small query at
parallelism 2 (on the workers) minus the same query at parallelism 1, less one stage; a
stage is what a join-and-aggregate over the same tiny input adds per extra exchange. Every timing is the best of ``--repeat`` runs.

    python benchmarks/calibrate_cost.py [--engine local|spark] [--rows 1000000] [--repeat 3] [--dry-run]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import flowsql
from flowsql.optimizer.cost.constants import CONSTANTS_FILE
from flowsql.optimizer.cost.row_width import row_width
from flowsql.planner.schema import Field

#: bytes of a row of the synthetic table, as the cost model estimates it
COLUMNS = {"k": pa.int64(), "v": pa.int64(), "x": pa.float64(), "s": pa.string()}


def synthetic(rows: int, keys: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "k": pa.array(rng.integers(0, keys, rows)),
        "v": pa.array(rng.integers(0, 1000, rows)),
        "x": pa.array(rng.random(rows)),
        "s": pa.array([f"name-{i % 1000:04d}-padding" for i in range(rows)]),
    })


def exchange_count(session: flowsql.Session, sql: str) -> int:
    """Exchanges in the plan ``session`` chooses for ``sql`` (each adds a stage)."""
    text = session.sql(f"EXPLAIN {sql}").plan_text or ""
    return text.split("== Physical Plan ==")[1].count("Exchange[")


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


#: rows of the tiny table ``s`` (the nested-loop join compares SMALL * SMALL pairs)
SMALL = 2000

#: the queries every engine times for ``cpu_constants``, by the name it reads them by
CPU_QUERIES = {
    "count": "SELECT count(*) FROM t",
    "scan": "SELECT k, v, x, s FROM t WHERE v >= 0 AND v >= 0",
    "scan_one": "SELECT k, v, x, s FROM t WHERE v >= 0",
    "filtered": "SELECT k FROM t WHERE v >= 0 AND x < 2.0 AND k >= 0",
    "agg": "SELECT k, sum(v) FROM t GROUP BY k",
    "join": "SELECT count(*) FROM t JOIN d ON t.k = d.k",
    "dim_count": "SELECT count(*) FROM d",
    "sort": "SELECT k FROM t ORDER BY x",
    "window": "SELECT k, sum(v) OVER (PARTITION BY k) FROM t",
    "loop": "SELECT count(*) FROM s a JOIN s b ON a.v < b.v",
    "one_row": "SELECT 1",
    "tiny_count": "SELECT count(*) FROM s",
}


def write_tables(directory: Path, rows: int) -> dict[str, Path]:
    """The synthetic tables as Parquet files in ``directory``, by table name: ``t`` (``rows``
    rows, a key per four rows), ``d`` (a quarter as many, the same keys) and ``s`` (SMALL
    rows over 100 keys)."""
    paths = {name: directory / f"{name}.parquet" for name in ("t", "d", "s")}
    pq.write_table(synthetic(rows, rows // 4), paths["t"])
    pq.write_table(synthetic(rows // 4, rows // 4, seed=8), paths["d"])
    pq.write_table(synthetic(SMALL, 100, seed=9), paths["s"])
    return paths


def measure(rows: int, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        big_path, dim_path, tiny_path = write_tables(Path(tmp), rows).values()
        session = flowsql.connect()
        for name, path in (("t", big_path), ("d", dim_path), ("s", tiny_path)):
            session.sql(f"CREATE TABLE {name} WITH ('path'='{path}')")

        def q(sql: str) -> float:
            return best(lambda: session.sql(sql).to_arrow(), repeat)

        timings = {name: q(sql) for name, sql in CPU_QUERIES.items()}
        local_small = timings["tiny_count"]
        count = timings["count"]
        shuffled_sql = "SELECT k, count(DISTINCT v) FROM t GROUP BY k"  # rows hashed unsplit
        shuffled_p1 = q(shuffled_sql)
        parallel = flowsql.connect(parallelism=2)
        parallel.set("optimizer.small-query-on-one-subtask", "false")  # always on workers
        for name, path in (("t", big_path), ("s", tiny_path)):
            parallel.sql(f"CREATE TABLE {name} WITH ('path'='{path}')")
        parallel.sql("SELECT count(*) FROM s").to_arrow()  # start the workers
        job = best(lambda: parallel.sql("SELECT count(*) FROM s").to_arrow(), repeat)
        # a job with more stages over the same tiny input: the difference per exchange is
        # what starting and connecting one more stage costs
        staged_sql = ("SELECT count(*) FROM (SELECT a.k FROM s a JOIN s b ON a.k = b.k "
                      "JOIN s c ON b.v = c.v GROUP BY a.k)")
        staged = best(lambda: parallel.sql(staged_sql).to_arrow(), repeat)
        staged_local = q(staged_sql)
        extra_stages = (exchange_count(parallel, staged_sql)
                        - exchange_count(parallel, "SELECT count(*) FROM s"))
        count_p2 = best(lambda: parallel.sql("SELECT count(*) FROM t").to_arrow(), repeat)
        shuffled_p2 = best(lambda: parallel.sql(shuffled_sql).to_arrow(), repeat)
        parallel.close()
        session.close()

    batch = synthetic(200_000, 50_000).select(["k", "v", "x"])
    batch_bytes = batch.nbytes

    def ipc_roundtrip(sink_to_disk: bool) -> None:
        if sink_to_disk:
            with tempfile.NamedTemporaryFile() as f:
                with pa.ipc.new_stream(f.name, batch.schema) as writer:
                    writer.write_table(batch)
                pa.ipc.open_stream(f.name).read_all()
            return
        buffer = io.BytesIO()
        with pa.ipc.new_stream(buffer, batch.schema) as writer:
            writer.write_table(batch)
        pa.ipc.open_stream(buffer.getvalue()).read_all()

    spill = best(lambda: ipc_roundtrip(True), repeat) / batch_bytes
    stage = max((staged - staged_local) - (job - local_small), 1e-4) / max(extra_stages, 1)
    # what a hash exchange of (k, v) adds at parallelism 2 beyond half the work of p1,
    # per byte one subtask receives; never below an in-memory IPC round trip
    shuffled_bytes = rows * 16 / 2
    moved = (shuffled_p2 - shuffled_p1 / 2) - (count_p2 - count / 2)
    network = max(moved / shuffled_bytes,
                  best(lambda: ipc_roundtrip(False), repeat) / batch_bytes)
    return {
        **cpu_constants(timings, rows),
        "network_byte": positive(network),
        "spill_byte": positive(spill),
        "parallel_job": positive(job - local_small - stage),
        "stage": stage,
    }


def positive(value: float) -> float:
    """A floor for differences of noisy timings, which can come out at or below zero."""
    return max(value, 1e-10)


def cpu_constants(timings: dict[str, float], rows: int) -> dict[str, float]:
    """The per-row and per-byte constants from the timings of ``CPU_QUERIES`` (keyed as
    there) over ``rows`` rows: each is a query minus the cheaper one it extends, divided
    by the units of work the difference adds. Shared by every engine's calibration."""
    t = timings
    width = row_width(tuple(Field.fresh(n, typ) for n, typ in COLUMNS.items()))
    dim_rows = rows // 4
    count = t["count"]
    expression = positive((t["scan"] - t["scan_one"]) / rows)
    build_probe = positive(t["join"] - count - t["dim_count"])
    # the runtime's probe and build loops are the same kernels; a build row is dearer
    probe_row = positive(build_probe / (rows + 2 * dim_rows))
    return {
        "scan_byte": positive((t["scan"] - t["one_row"]) / (rows * width)),
        "expression_row": expression,
        "pass_row": positive((t["filtered"] - count) / rows - 3 * expression),
        "hash_build_row": 2 * probe_row,
        "hash_probe_row": probe_row,
        "join_output_row": probe_row,
        "aggregate_row": positive((t["agg"] - count) / rows),
        "sort_aggregate_row": positive((t["agg"] - count) / rows / 2),
        "sort_row_log": positive((t["sort"] - count) / (rows * math.log2(rows))),
        "merge_row": probe_row,
        "loop_pair": positive((t["loop"] - t["tiny_count"]) / (SMALL * SMALL)),
        "window_row": positive((t["window"] - count) / rows),
    }


def write_entry(engine: str, measured: dict[str, float]) -> None:
    """Replace ``engine``'s entry of the constants file, keeping the other engines'."""
    table = json.loads(CONSTANTS_FILE.read_text())
    table[engine] = {k: float(f"{v:.4g}") for k, v in sorted(measured.items())}
    CONSTANTS_FILE.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n")
    print(f"wrote the '{engine}' entry of {CONSTANTS_FILE}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engine", choices=("local", "spark"), default="local",
                        help="whose constants to measure and write (spark: local mode)")
    parser.add_argument("--dry-run", action="store_true", help="print, do not write")
    args = parser.parse_args(argv)
    if args.engine == "spark":
        from calibrate_cost_spark import measure_spark  # starts a JVM; only when asked
        measured = measure_spark(args.rows, args.repeat)
    else:
        measured = measure(args.rows, args.repeat)
    for key, value in sorted(measured.items()):
        print(f"{key:20s} {value:.3e}")
    if not args.dry_run:
        write_entry(args.engine, measured)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
