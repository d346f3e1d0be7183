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

    python benchmarks/calibrate_cost.py [--rows 1000000] [--repeat 3] [--dry-run]
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


def measure(rows: int, repeat: int) -> dict[str, float]:
    width = row_width(tuple(Field.fresh(n, t) for n, t in COLUMNS.items()))
    small = 2000
    with tempfile.TemporaryDirectory() as tmp:
        big_path, dim_path, tiny_path = (Path(tmp) / f"{n}.parquet" for n in ("t", "d", "s"))
        pq.write_table(synthetic(rows, rows // 4), big_path)
        pq.write_table(synthetic(rows // 4, rows // 4, seed=8), dim_path)
        pq.write_table(synthetic(small, 100, seed=9), tiny_path)
        session = flowsql.connect()
        for name, path in (("t", big_path), ("d", dim_path), ("s", tiny_path)):
            session.sql(f"CREATE TABLE {name} WITH ('path'='{path}')")

        def q(sql: str) -> float:
            return best(lambda: session.sql(sql).to_arrow(), repeat)

        count = q("SELECT count(*) FROM t")
        scan = q("SELECT k, v, x, s FROM t WHERE v >= 0 AND v >= 0")
        scan_one = q("SELECT k, v, x, s FROM t WHERE v >= 0")
        filtered = q("SELECT k FROM t WHERE v >= 0 AND x < 2.0 AND k >= 0")
        projected = q("SELECT k + 1, v * 2, x + 1.0 FROM t")
        agg = q("SELECT k, sum(v) FROM t GROUP BY k")
        dim_rows = rows // 4
        join = q("SELECT count(*) FROM t JOIN d ON t.k = d.k")
        dim_scan = q("SELECT count(*) FROM d")
        sort = q("SELECT k FROM t ORDER BY x")
        window = q("SELECT k, sum(v) OVER (PARTITION BY k) FROM t")
        loop = q("SELECT count(*) FROM s a JOIN s b ON a.v < b.v")
        one_row = q("SELECT 1")
        local_small = q("SELECT count(*) FROM s")
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
    positive = lambda value: max(value, 1e-10)  # noqa: E731 (a floor for noisy differences)
    scan_byte = positive((scan - one_row) / (rows * width))
    expression = positive((scan - scan_one) / rows)
    pass_row = positive((filtered - count) / rows - 3 * expression)
    build_probe = positive(join - count - dim_scan)
    # the runtime's probe and build loops are the same kernels; a build row is dearer
    probe_row = positive(build_probe / (rows + 2 * dim_rows))
    return {
        "scan_byte": scan_byte,
        "expression_row": expression,
        "pass_row": pass_row,
        "hash_build_row": 2 * probe_row,
        "hash_probe_row": probe_row,
        "join_output_row": probe_row,
        "aggregate_row": positive((agg - count) / rows),
        "sort_aggregate_row": positive((agg - count) / rows / 2),
        "sort_row_log": positive((sort - count) / (rows * math.log2(rows))),
        "merge_row": probe_row,
        "loop_pair": positive((loop - local_small) / (small * small)),
        "window_row": positive((window - count) / rows),
        "network_byte": positive(network),
        "spill_byte": positive(spill),
        "parallel_job": positive(job - local_small - stage),
        "stage": stage,
        "_projected_check": projected,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dry-run", action="store_true", help="print, do not write")
    args = parser.parse_args(argv)
    measured = {k: v for k, v in measure(args.rows, args.repeat).items()
                if not k.startswith("_")}
    for key, value in sorted(measured.items()):
        print(f"{key:20s} {value:.3e}")
    if not args.dry_run:
        table = json.loads(CONSTANTS_FILE.read_text())
        table["local"] = {k: float(f"{v:.4g}") for k, v in sorted(measured.items())}
        CONSTANTS_FILE.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n")
        print(f"wrote {CONSTANTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
