"""Cardinality estimates of the 22 TPC-H plans against the rows DuckDB counts.

For every join and aggregate of each optimized logical plan, the estimator's rows are
compared with the actual rows of that sub-plan (spelled as SQL and counted by DuckDB over
the same Parquet files); prints per query the median and max q-error of its joins and
aggregates, then the overall figures. Statistics stand in for ``ANALYZE TABLE`` (exact
per-column figures computed by DuckDB; see ``tests/optimizer/estimate_quality.py``);
``--footer-only`` keeps only what the Parquet footers give.

    python benchmarks/estimate_quality.py --sf 1 --data /work/data/sf1 [--markdown] [--nodes]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.optimizer.estimate_quality import (  # noqa: E402
    NodeEstimate,
    catalog,
    median,
    oracle,
    query_estimates,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, required=True, help="scale factor (for the title)")
    parser.add_argument("--data", type=Path, required=True, help="directory of the Parquet files")
    parser.add_argument("--queries", default="1-22", help="e.g. 1-22 or 2,5,9")
    parser.add_argument("--footer-only", action="store_true",
                        help="no per-column statistics, only the Parquet footers' figures")
    parser.add_argument("--markdown", action="store_true", help="print a table for the docs")
    parser.add_argument("--nodes", action="store_true", help="print every node's figures")
    args = parser.parse_args()

    started = time.perf_counter()
    con = oracle(args.data)
    cat = catalog(args.data, con, analyzed=not args.footer_only)
    print(f"statistics ready in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    everything: list[NodeEstimate] = []
    rows = []
    for number in _numbers(args.queries):
        nodes = query_estimates(cat, con, number)
        everything += nodes
        if args.nodes:
            for n in nodes:
                print(f"  Q{number} {n.label:40s} est={n.estimated:12.0f} act={n.actual:10d} "
                      f"q={n.q_error:8.2f}", file=sys.stderr)
        joins = [n.q_error for n in nodes if n.kind == "join"]
        aggs = [n.q_error for n in nodes if n.kind == "aggregate"]
        qs = joins + aggs
        rows.append((f"Q{number}", len(qs), median(qs), max(qs, default=1.0),
                     max(joins, default=1.0), max(aggs, default=1.0)))
    all_q = [n.q_error for n in everything]
    join_q = [n.q_error for n in everything if n.kind == "join"]
    rows.append(("all", len(all_q), median(all_q), max(all_q, default=1.0),
                 max(join_q, default=1.0),
                 max((n.q_error for n in everything if n.kind == "aggregate"), default=1.0)))
    title = f"TPC-H SF {args.sf:g}: q-error of joins and aggregates"
    _print(title, rows, args.markdown)
    print(f"median over joins only: {median(join_q):.2f}; nodes: {len(all_q)}")


def _numbers(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        out += list(range(int(low), int(high or low) + 1))
    return out


def _print(title: str, rows: list[tuple[str, int, float, float, float, float]],
           markdown: bool) -> None:
    print(title)
    if markdown:
        print("| query | nodes | median q-error | max q-error | max join | max aggregate |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, n, med, top, join, agg in rows:
            print(f"| {name} | {n} | {med:.2f} | {top:.2f} | {join:.2f} | {agg:.2f} |")
        return
    print(f"{'query':6s} {'nodes':>5s} {'median':>8s} {'max':>9s} {'max join':>9s} {'max agg':>9s}")
    for name, n, med, top, join, agg in rows:
        print(f"{name:6s} {n:5d} {med:8.2f} {top:9.2f} {join:9.2f} {agg:9.2f}")


if __name__ == "__main__":
    main()
