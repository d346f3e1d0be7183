"""TPC-H at parallelism 1 (the single-process executor) against parallelism N (worker
processes), in the same run on the same Parquet files.

Each configuration has its own session; worker start-up is paid once, before the timed
queries (a warm-up query), so the figures compare execution only. At parallelism 1 Arrow's kernels already use every
core (about 1.2 of 2 on average over the 22 queries at SF 1); ``--p1-threads 1`` runs
parallelism 1 single-threaded, as each worker subtask runs, which isolates the scaling of
the runtime itself. Every answer at
parallelism N is checked against the answer at parallelism 1 (``compare_tables``). Prints
per-query seconds, the speedup (p1 / pN) and totals; ``--markdown`` prints a table.

    python benchmarks/tpch_parallelism.py --sf 1 --data data/sf1 [--parallelism 2]
        [--p1-threads 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pyarrow as pa

import flowsql
from flowsql.session import Session
from flowsql.tpch.cli import query_list
from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from flowsql.tpch.verify import compare_tables, is_ordered_query

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")


def open_session(data: Path, parallelism: int) -> Session:
    session = flowsql.connect(parallelism=parallelism)
    for name in TABLES:
        session.sql(f"CREATE TABLE {name} WITH ('path'='{data / (name + '.parquet')}')")
    # starts the workers outside the timings (planned for them: the query is small enough
    # to run in the session otherwise)
    session.set("optimizer.small-query-on-one-subtask", "false")
    session.sql("SELECT count(*) FROM region")
    session.set("optimizer.small-query-on-one-subtask", "true")
    return session


def timed(session: Session, sql: str) -> tuple[float, pa.Table]:
    started = time.perf_counter()
    table = session.sql(sql).to_arrow()
    return time.perf_counter() - started, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, required=True, help="scale factor (for the label)")
    parser.add_argument("--data", type=Path, required=True, help="directory of the Parquet files")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--queries", type=query_list, default=list(QUERY_NUMBERS))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--p1-threads", type=int, default=None,
                        help="Arrow threads of the parallelism-1 session (default: all cores); "
                             "1 measures the runtime's own scaling, one thread per subtask")
    args = parser.parse_args(argv)
    if args.p1_threads is not None:
        pa.set_cpu_count(args.p1_threads)

    serial, parallel = open_session(args.data, 1), open_session(args.data, args.parallelism)
    rows: list[tuple[int, float, float, str]] = []
    try:
        for number in args.queries:
            sql = load_query(number)
            one, expected = timed(serial, sql)
            many, actual = timed(parallel, sql)
            differences = compare_tables(actual, expected, is_ordered_query(sql))
            rows.append((number, one, many, "ok" if not differences else differences[0]))
            print(f"Q{number:02d} p1 {one:7.2f}s  p{args.parallelism} {many:7.2f}s  "
                  f"x{one / many:5.2f}  {rows[-1][3]}", file=sys.stderr, flush=True)
    finally:
        serial.close()
        parallel.close()
    total_one = sum(r[1] for r in rows)
    total_many = sum(r[2] for r in rows)
    p = args.parallelism
    if args.markdown:
        print(f"| query | p1 (s) | p{p} (s) | speedup | answer |\n|---|---|---|---|---|")
        for number, one, many, status in rows:
            print(f"| Q{number} | {one:.2f} | {many:.2f} | {one / many:.2f} | {status} |")
        print(f"| total | {total_one:.2f} | {total_many:.2f} | {total_one / total_many:.2f} | |")
    else:
        print(f"SF {args.sf:g}: total p1 {total_one:.2f}s, p{p} {total_many:.2f}s, "
              f"speedup {total_one / total_many:.2f}")
    return 0 if all(r[3] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
