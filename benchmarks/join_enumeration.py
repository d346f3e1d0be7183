"""Optimizer time of join ordering for 12 relations: chain, cycle, star and clique graphs.

Each shape is a comma list of 12 scans with WHERE equalities; the time is the whole logical
optimization (median of ``--repeat`` runs), not execution. A clique (every relation joined
on one key) has more csg-cmp pairs than ``MAX_DP_PAIRS`` and shows the greedy fallback.

    python benchmarks/join_enumeration.py [--relations 12] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import pyarrow as pa

from flowsql.optimizer import optimize
from flowsql.optimizer.dpccp import csg_cmp_pairs
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry, TableStatistics
from flowsql.planner.expressions import Call, Expr
from flowsql.planner.logical import Filter, Join, LogicalPlan, Scan
from flowsql.planner.schema import Field


def _scan(i: int) -> Scan:
    schema = pa.schema([pa.field("k", T.INT64), pa.field("a", T.INT64),
                        pa.field("b", T.INT64)])
    entry = TableEntry(f"t{i}", schema, {"path": f"t{i}.parquet"},
                       TableStatistics(1000 * (i + 1) ** 2))
    return Scan(entry, tuple(Field.fresh(f.name, f.type) for f in schema))


def _ref(scan: Scan, name: str) -> Expr:
    return next(f for f in scan.fields if f.name == name).ref()


def _eq(a: Expr, b: Expr) -> Expr:
    return Call("eq", (a, b), T.BOOL)


def query(shape: str, n: int) -> LogicalPlan:
    scans = [_scan(i) for i in range(n)]
    if shape == "chain":
        preds = [_eq(_ref(scans[i], "a"), _ref(scans[i + 1], "b")) for i in range(n - 1)]
    elif shape == "cycle":
        preds = [_eq(_ref(scans[i], "a"), _ref(scans[(i + 1) % n], "b")) for i in range(n)]
    elif shape == "star":
        preds = [_eq(_ref(scans[0], "a"), _ref(scans[i], "b")) if i % 2
                 else _eq(_ref(scans[0], "b"), _ref(scans[i], "a")) for i in range(1, n)]
    else:  # clique: one key, written as a chain; the classes make every pair an edge
        preds = [_eq(_ref(scans[i], "k"), _ref(scans[i + 1], "k")) for i in range(n - 1)]
    plan: LogicalPlan = scans[0]
    for s in scans[1:]:
        plan = Join(plan, s, "cross")
    return Filter(plan, Call("and", tuple(preds), T.BOOL))


def _pairs(shape: str, n: int) -> int:
    neighbors = [0] * n
    edges = {"chain": [(i, i + 1) for i in range(n - 1)],
             "cycle": [(i, (i + 1) % n) for i in range(n)],
             "star": [(0, i) for i in range(1, n)],
             "clique": [(i, j) for i in range(n) for j in range(i + 1, n)]}[shape]
    for a, b in edges:
        neighbors[a] |= 1 << b
        neighbors[b] |= 1 << a
    return sum(1 for _ in csg_cmp_pairs(neighbors))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--relations", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{'shape':8} {'pairs':>8} {'optimize s':>11}")
    for shape in ("chain", "cycle", "star", "clique"):
        times = []
        for _ in range(args.repeat):
            plan = query(shape, args.relations)
            start = time.perf_counter()
            optimize(plan)
            times.append(time.perf_counter() - start)
        print(f"{shape:8} {_pairs(shape, args.relations):>8} {statistics.median(times):>11.3f}")


if __name__ == "__main__":
    main()
