"""ANALYZE TABLE on a TPC-H table: time, peak memory, and distinct-count error per column.

Creates the table over its Parquet file, runs ``ANALYZE TABLE <t> COMPUTE STATISTICS FOR
ALL COLUMNS`` once in this process and reports its wall time and the process's peak RSS
(measured before DuckDB runs, so the figure is ANALYZE's own plus the interpreter and
pyarrow), and its CPU time (user + system), which a busy machine inflates less than wall
time. Then DuckDB computes every column's exact ``count(DISTINCT c)`` and the script
prints the sketch's relative error per column (DuckDB's time is not part of the figures).

    python benchmarks/analyze_statistics.py --data /work/data/sf1 [--table lineitem] [--markdown]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a TPC-H Parquet directory")
    parser.add_argument("--table", default="lineitem")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    path = (args.data / f"{args.table}.parquet").resolve()

    import flowsql

    session = flowsql.connect()
    session.sql(f"CREATE TABLE {args.table} WITH ('connector' = 'filesystem', "
                f"'path' = '{path}', 'format' = 'parquet')")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cpu_before, start = _cpu_seconds(), time.perf_counter()
    report = session.sql(f"ANALYZE TABLE {args.table} COMPUTE STATISTICS FOR ALL COLUMNS")
    seconds, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_before
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = report.to_arrow().to_pylist()

    import duckdb

    con = duckdb.connect()
    exact = con.execute("SELECT " + ", ".join(f"count(DISTINCT {r['column']})" for r in rows)
                        + f" FROM read_parquet('{path}')").fetchone()
    assert exact is not None
    statistics = session.catalog.get(args.table).statistics
    print(f"ANALYZE TABLE {args.table}: {statistics.row_count} rows, {len(rows)} columns, "
          f"{seconds:.2f} s wall, {cpu:.2f} s CPU (load average {os.getloadavg()[0]:.1f}), "
          f"peak RSS {peak:.0f} MiB (before ANALYZE {rss_before:.0f} MiB)")
    errors = []
    if args.markdown:
        print("\n| column | type | exact distinct | estimated | error |\n|---|---|---:|---:|---:|")
    for row, truth in zip(rows, exact):
        error = (row["distinct_count"] - truth) / truth if truth else 0.0
        errors.append(abs(error))
        if args.markdown:
            print(f"| {row['column']} | {row['type']} | {truth} | {row['distinct_count']} | "
                  f"{error:+.2%} |")
        else:
            print(f"{row['column']:<18} {row['type']:<16} exact {truth:>9} "
                  f"estimated {row['distinct_count']:>9} error {error:+.2%}")
    print(f"\ndistinct-count error: max {max(errors):.2%}, mean {sum(errors) / len(errors):.2%}")


def _cpu_seconds() -> float:
    """User plus system CPU time of this process: on a shared machine, wall time measures
    the other tenants as much as ANALYZE."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
