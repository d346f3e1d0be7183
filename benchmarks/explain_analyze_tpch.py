"""Estimate quality and EXPLAIN ANALYZE overhead on the 22 TPC-H queries.

For every query, EXPLAIN ANALYZE gives each join's and aggregate's estimated and actual
rows; the script prints the median and max q-error (``max(est/act, act/est)``, both at
least 1) of those operators per query, and over all of them (also joins alone, the figure
the cost-based optimizer's target is stated for). It also times each query plainly and
under EXPLAIN ANALYZE (``--repeat`` runs each, alternating, and keeps the median of each),
so the overhead of the measurement shows in seconds and percent.

    python benchmarks/explain_analyze_tpch.py --sf 1 --data data/sf1 [--parallelism 1]
        [--repeat 3] [--queries 1,5,9] [--markdown]

Statistics: whatever the session has -- Parquet metadata, or what ANALYZE TABLE stored.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import flowsql
from flowsql.session import Session
from flowsql.tpch.cli import query_list
from flowsql.tpch.queries import QUERY_NUMBERS, load_query

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")


@dataclass
class QueryFigures:
    number: int
    join_errors: list[float]
    aggregate_errors: list[float]
    plain_seconds: float
    analyze_seconds: float

    @property
    def errors(self) -> list[float]:
        return self.join_errors + self.aggregate_errors


def open_session(data: Path, parallelism: int) -> Session:
    session = flowsql.connect(parallelism=parallelism)
    for name in TABLES:
        session.sql(f"CREATE TABLE {name} WITH ('path'='{data / (name + '.parquet')}')")
    session.sql("SELECT count(*) FROM region")  # starts any workers outside the timings
    return session


def measure(session: Session, number: int, repeat: int) -> QueryFigures:
    sql = load_query(number)
    plain: list[float] = []
    analyzed: list[float] = []
    analysis = None
    for _ in range(repeat):
        started = time.perf_counter()
        session.sql(sql).to_arrow()
        plain.append(time.perf_counter() - started)
        started = time.perf_counter()
        analysis = session.sql("EXPLAIN ANALYZE " + sql).analysis
        analyzed.append(time.perf_counter() - started)
    assert analysis is not None
    joins: list[float] = []
    aggregates: list[float] = []
    for row in analysis.to_pylist():
        if row["q_error"] is None:
            continue
        if row["node"].endswith("JoinExec"):
            joins.append(row["q_error"])
        elif row["node"].endswith("AggregateExec"):
            aggregates.append(row["q_error"])
    return QueryFigures(number, joins, aggregates, statistics.median(plain),
                        statistics.median(analyzed))


def _stat(values: list[float], how: str) -> str:
    if not values:
        return "-"
    return f"{(statistics.median(values) if how == 'median' else max(values)):.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, required=True, help="scale factor (for the label)")
    parser.add_argument("--data", type=Path, required=True, help="directory of the Parquet files")
    parser.add_argument("--parallelism", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1,
                        help="timed runs per query and mode (the median is reported)")
    parser.add_argument("--queries", type=query_list, default=list(QUERY_NUMBERS))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)

    session = open_session(args.data, args.parallelism)
    figures: list[QueryFigures] = []
    try:
        for number in args.queries:
            f = measure(session, number, args.repeat)
            figures.append(f)
            print(f"Q{number:02d} q-error median {_stat(f.errors, 'median')} max "
                  f"{_stat(f.errors, 'max')} (joins {len(f.join_errors)}, aggregates "
                  f"{len(f.aggregate_errors)})  plain {f.plain_seconds:.3f}s  analyze "
                  f"{f.analyze_seconds:.3f}s", file=sys.stderr, flush=True)
    finally:
        session.close()

    everything = [e for f in figures for e in f.errors]
    joins = [e for f in figures for e in f.join_errors]
    aggregates = [e for f in figures for e in f.aggregate_errors]
    plain = sum(f.plain_seconds for f in figures)
    analyzed = sum(f.analyze_seconds for f in figures)
    print(f"TPC-H SF {args.sf:g}, parallelism {args.parallelism}, median of {args.repeat} "
          "run(s) per query and mode")
    if args.markdown:
        print("| query | joins+aggs | median q-error | max q-error | plain s | analyze s "
              "| overhead s |\n|---|---:|---:|---:|---:|---:|---:|")
        for f in figures:
            print(f"| Q{f.number} | {len(f.errors)} | {_stat(f.errors, 'median')} | "
                  f"{_stat(f.errors, 'max')} | {f.plain_seconds:.3f} | "
                  f"{f.analyze_seconds:.3f} | {f.analyze_seconds - f.plain_seconds:+.3f} |")
        print(f"| all | {len(everything)} | {_stat(everything, 'median')} | "
              f"{_stat(everything, 'max')} | {plain:.3f} | {analyzed:.3f} | "
              f"{analyzed - plain:+.3f} |")
    else:
        for f in figures:
            print(f"Q{f.number:02d}  n={len(f.errors):2d}  median {_stat(f.errors, 'median'):>7}"
                  f"  max {_stat(f.errors, 'max'):>8}  plain {f.plain_seconds:7.3f}s  "
                  f"analyze {f.analyze_seconds:7.3f}s  "
                  f"overhead {f.analyze_seconds - f.plain_seconds:+.3f}s")
    print(f"overall q-error: median {_stat(everything, 'median')}, max "
          f"{_stat(everything, 'max')} over {len(everything)} joins and aggregates")
    print(f"joins: median {_stat(joins, 'median')}, max {_stat(joins, 'max')} ({len(joins)}); "
          f"aggregates: median {_stat(aggregates, 'median')}, max "
          f"{_stat(aggregates, 'max')} ({len(aggregates)})")
    print(f"total: plain {plain:.3f}s, EXPLAIN ANALYZE {analyzed:.3f}s, overhead "
          f"{analyzed - plain:+.3f}s ({(analyzed - plain) / plain * 100:+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
