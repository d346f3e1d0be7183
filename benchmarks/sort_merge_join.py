"""Sort-merge join vs hash join on two inputs already sorted on the key: rows/s and peak RSS.

Both inputs have ``--rows`` rows each (key ``i // 2``, so every key has two rows on each
side and the inner join emits ``2 * rows`` rows) plus one float payload column, produced
batch by batch (``--batch`` rows) as a scan would, so an operator holds only what it keeps
itself. The merge join reads both inputs interleaved as the runner feeds it; the hash join
reads its build side to the end first. The output is consumed and dropped. Each
(algorithm, size) runs in a fresh process, which gives its own peak RSS; the baseline is
that process's RSS before the join started.

Throughput is input rows (both sides) per second of join time.

    python benchmarks/sort_merge_join.py [--rows 1000000,5000000] [--batch 65536] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.physical import HashJoinExec, SortMergeJoinExec, ValuesExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import MemoryBudget, Operator, OperatorContext
from flowsql.runtime.operators.contract import Merging
from flowsql.runtime.registry import create_operator

ALGORITHMS = ("merge", "hash")


def _side(name: str) -> ValuesExec:
    return ValuesExec((Field.fresh("k", T.INT64), Field.fresh(name, T.FLOAT64)), (), 0.0)


def _batches(rows: int, batch: int, seed: int) -> Iterator[pa.RecordBatch]:
    rng = np.random.default_rng(seed)
    for start in range(0, rows, batch):
        end = min(rows, start + batch)
        yield pa.record_batch([pa.array(np.arange(start, end, dtype=np.int64) // 2),
                               pa.array(rng.random(end - start))], names=["k", "v"])


def _node(algorithm: str) -> HashJoinExec | SortMergeJoinExec:
    left, right = _side("x"), _side("y")
    keys = (left.fields[0].ref(),), (right.fields[0].ref(),)
    if algorithm == "merge":
        return SortMergeJoinExec(left, right, "inner", *keys, None, 0.0)
    return HashJoinExec(left, right, "inner", *keys, None, "right", 0.0)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _drive(operator: Operator, inputs: list[Iterator[pa.RecordBatch]]) -> int:
    """Feed the operator as the pull loop does; the number of output rows."""
    out = 0
    if isinstance(operator, Merging):
        running = {0, 1}
        while running:
            index = operator.next_input()
            index = index if index in running else min(running)
            batch = next(inputs[index], None)
            emitted = (operator.end_input(index) if batch is None
                       else operator.process_batch(index, batch))
            if batch is None:
                running.discard(index)
            out += sum(b.num_rows for b in emitted)
        return out
    for index in operator.input_order or (0, 1):
        for batch in inputs[index]:
            out += sum(b.num_rows for b in operator.process_batch(index, batch))
        out += sum(b.num_rows for b in operator.end_input(index))
    return out


def child(algorithm: str, rows: int, batch: int) -> dict[str, Any]:
    operator = create_operator(_node(algorithm))
    budget = MemoryBudget(None)
    operator.open(OperatorContext("bench", {"execution.batch-size": str(batch)}, budget))
    baseline = _rss_mb()
    started = time.perf_counter()
    out = _drive(operator, [_batches(rows, batch, 1), _batches(rows, batch, 2)])
    seconds = time.perf_counter() - started
    operator.close()
    assert out == 2 * rows, out
    return {"algorithm": algorithm, "rows": rows, "seconds": round(seconds, 3),
            "rows_per_s": round(2 * rows / seconds), "peak_rss_mb": round(_rss_mb(), 1),
            "baseline_rss_mb": round(baseline, 1),
            "held_peak_mb": round(budget.peak / 2**20, 1), "output_rows": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="1000000,5000000")
    parser.add_argument("--batch", type=int, default=65536)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("ALGORITHM", "ROWS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.batch)))
        return
    results = []
    for rows in (int(r) for r in args.rows.split(",")):
        for algorithm in ALGORITHMS:
            done = subprocess.run([sys.executable, __file__, "--child", algorithm, str(rows),
                                   "--batch", str(args.batch)], check=True,
                                  capture_output=True, text=True)
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            if not args.markdown:
                print(json.dumps(results[-1]), flush=True)
    if args.markdown:
        print("| rows per side | join | seconds | input rows/s | peak RSS MB | RSS before MB "
              "| held (budget) peak MB |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        for r in results:
            print(f"| {r['rows']:,} | {r['algorithm']} | {r['seconds']} | {r['rows_per_s']:,} "
                  f"| {r['peak_rss_mb']} | {r['baseline_rss_mb']} | {r['held_peak_mb']} |")


if __name__ == "__main__":
    main()
