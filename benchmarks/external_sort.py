"""ORDER BY over more rows than the memory budget: the external merge sort against the
in-memory sort (unlimited budget) and DuckDB's ORDER BY, in the same run.

The input has ``--rows`` rows: a random int64 key (many duplicates), a float payload and
a short string payload, produced batch by batch (``--batch`` rows) as a scan would, so
the sort holds only what it keeps itself. The sorted output is consumed and dropped.
Each (engine, budget) runs in a fresh process, which gives its own peak RSS; the
baseline is that process's RSS before the sort started. DuckDB sorts the same rows from
an Arrow table it holds in memory (its peak RSS includes that input), fetching the result
batch by batch, with its default settings (all cores it may use).

    python benchmarks/external_sort.py [--rows 1000000,5000000] [--budgets unlimited,64mb]
        [--batch 65536] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.config.units import parse_memory_budget
from flowsql.planner.expressions import SortKey
from flowsql.planner.physical import SortExec, ValuesExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.registry import create_operator
from flowsql.runtime.spill import SpillSpace


def _batches(rows: int, batch: int) -> Iterator[pa.RecordBatch]:
    rng = np.random.default_rng(42)
    words = np.array([f"payload-{i:04d}" for i in range(1000)], dtype=object)
    for start in range(0, rows, batch):
        n = min(rows, start + batch) - start
        yield pa.record_batch([pa.array(rng.integers(0, rows // 4 + 1, n)),
                               pa.array(rng.random(n)),
                               pa.array(words[rng.integers(0, 1000, n)], pa.string())],
                              names=["k", "v", "s"])


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_flowsql(rows: int, budget: str, batch: int) -> dict[str, Any]:
    fields = (Field.fresh("k", T.INT64), Field.fresh("v", T.FLOAT64),
              Field.fresh("s", T.STRING))
    node = SortExec(ValuesExec(fields, (), 0.0), (SortKey(fields[0].ref()),), 0.0)
    memory = MemoryBudget(None if budget == "unlimited"
                          else parse_memory_budget(budget, "execution.memory-budget"))
    with tempfile.TemporaryDirectory(prefix="external-sort-bench-") as tmp:
        context = OperatorContext("bench", {"execution.batch-size": str(batch)}, memory,
                                  SpillSpace([tmp]))
        operator = create_operator(node)
        operator.open(context)
        baseline = _rss_mb()
        started = time.perf_counter()
        out = 0
        previous = None
        for part in _batches(rows, batch):
            operator.process_batch(0, part)
        for sorted_batch in operator.end_input(0):
            keys = sorted_batch.column(0)
            first = keys[0].as_py()
            assert previous is None or previous <= first, "output out of order"
            previous = keys[-1].as_py()
            out += sorted_batch.num_rows
        seconds = time.perf_counter() - started
        operator.close()
        context.spill.cleanup()
    assert out == rows, out
    return {"engine": "flowsql", "budget": budget, "rows": rows, "seconds": round(seconds, 3),
            "rows_per_s": round(rows / seconds),
            "spilled_mb": round(context.metrics.get("spilled_bytes", 0) / 2**20, 1),
            "spilled_runs": context.metrics.get("spilled_runs", 0),
            "peak_rss_mb": round(_rss_mb(), 1), "baseline_rss_mb": round(baseline, 1),
            "held_peak_mb": round(memory.peak / 2**20, 1)}


def child_duckdb(rows: int, batch: int) -> dict[str, Any]:
    import duckdb

    table = pa.Table.from_batches(list(_batches(rows, batch)))
    con = duckdb.connect()
    con.register("t", table)
    baseline = _rss_mb()
    started = time.perf_counter()
    reader = con.sql("SELECT * FROM t ORDER BY k").to_arrow_reader(batch)
    out = sum(b.num_rows for b in reader)
    seconds = time.perf_counter() - started
    assert out == rows, out
    return {"engine": "duckdb", "budget": "default", "rows": rows,
            "seconds": round(seconds, 3), "rows_per_s": round(rows / seconds),
            "spilled_mb": None, "spilled_runs": None, "peak_rss_mb": round(_rss_mb(), 1),
            "baseline_rss_mb": round(baseline, 1), "held_peak_mb": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="1000000,5000000")
    parser.add_argument("--budgets", default="unlimited,64mb")
    parser.add_argument("--batch", type=int, default=65536)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--child", nargs=3, metavar=("ENGINE", "ROWS", "BUDGET"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        engine, rows, budget = args.child
        result = (child_duckdb(int(rows), args.batch) if engine == "duckdb"
                  else child_flowsql(int(rows), budget, args.batch))
        print(json.dumps(result))
        return
    results = []
    for rows in (int(r) for r in args.rows.split(",")):
        runs = [("flowsql", b) for b in args.budgets.split(",")] + [("duckdb", "default")]
        for engine, budget in runs:
            done = subprocess.run([sys.executable, __file__, "--child", engine, str(rows),
                                   budget, "--batch", str(args.batch)], check=True,
                                  capture_output=True, text=True)
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            if not args.markdown:
                print(json.dumps(results[-1]), flush=True)
    if args.markdown:
        print("| rows | engine | budget | seconds | rows/s | spilled MB (runs) | peak RSS MB "
              "| RSS before MB | held peak MB |")
        print("|---:|---|---|---:|---:|---:|---:|---:|---:|")
        for r in results:
            spilled = "" if r["spilled_mb"] is None else f"{r['spilled_mb']} ({r['spilled_runs']})"
            held = "" if r["held_peak_mb"] is None else r["held_peak_mb"]
            print(f"| {r['rows']:,} | {r['engine']} | {r['budget']} | {r['seconds']} "
                  f"| {r['rows_per_s']:,} | {spilled} | {r['peak_rss_mb']} "
                  f"| {r['baseline_rss_mb']} | {held} |")


if __name__ == "__main__":
    main()
