"""TPC-H on Spark local mode: flowsql's compiled PySpark programs against the same queries as
Spark SQL text, on one SparkSession, plus the local engine for reference. The first query also pays the session's warm-up, so each
figure is the best of ``--repeat`` runs.

For each query, in the same process and session: flowsql with ``engine='spark'`` (our plan,
compiled to DataFrame calls), then ``spark.sql(text)`` (Spark's own planner), then flowsql's
local engine. Every answer is compared with DuckDB's. Prints per-query and total seconds and
the ratio ours / Spark SQL; ``--markdown`` prints a table for docs/benchmarks.md.

    python benchmarks/tpch_spark.py --sf 1 --data data/sf1 [--repeat 2] [--markdown]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa

import flowsql
from flowsql.spark.session import get_spark
from flowsql.tpch.generate import TABLES, generate, missing_tables, table_path
from flowsql.tpch.queries import QUERY_NUMBERS, load_query
from flowsql.tpch.verify import compare_tables, is_ordered_query


def best_of(repeat: int, fn: Callable[[], pa.Table]) -> tuple[float, pa.Table]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    assert result is not None
    return best, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--queries", default=",".join(str(q) for q in QUERY_NUMBERS))
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    data = args.data or Path(f"data/sf{args.sf:g}")
    if missing_tables(data):
        generate(args.sf, data)
    queries = [int(q) for q in args.queries.split(",")]

    settings = {"spark.master": "local[*]"}
    ours = flowsql.connect(engine="spark", **settings)
    local = flowsql.connect()
    oracle = duckdb.connect()
    spark = get_spark(ours.settings)
    for table in TABLES:
        path = table_path(data, table).resolve()
        for session in (ours, local):
            session.sql(f"CREATE TABLE {table} WITH ('path'='{path}')")
        spark.read.parquet(str(path)).createOrReplaceTempView(table)
        oracle.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{path}')")

    rows = []
    for q in queries:
        sql = load_query(q)
        expected = oracle.sql(sql).to_arrow_table()
        ordered = is_ordered_query(sql)
        t_ours, r_ours = best_of(args.repeat, lambda s=sql: ours.sql(s).to_arrow())
        t_spark, r_spark = best_of(args.repeat, lambda s=sql: spark.sql(s).toArrow())
        t_local, r_local = best_of(1, lambda s=sql: local.sql(s).to_arrow())
        # Spark SQL's own answers are checked by row count only: its AVG over decimals is a
        # rounded decimal where DuckDB (and flowsql) give a double.
        ok = all(not compare_tables(r, expected, ordered=ordered) for r in (r_ours, r_local)) \
            and r_spark.num_rows == expected.num_rows
        rows.append((q, t_ours, t_spark, t_local, ok))
        print(f"Q{q:<3} ours {t_ours:7.3f} s  spark sql {t_spark:7.3f} s  "
              f"ratio {t_ours / t_spark:5.2f}  local {t_local:7.3f} s  verified {ok}", flush=True)

    total_ours = sum(r[1] for r in rows)
    total_spark = sum(r[2] for r in rows)
    total_local = sum(r[3] for r in rows)
    print(f"total ours {total_ours:.3f} s  spark sql {total_spark:.3f} s  "
          f"ratio {total_ours / total_spark:.2f}  local {total_local:.3f} s  "
          f"verified {sum(r[4] for r in rows)}/{len(rows)}")
    if args.markdown:
        print(f"\nTPC-H SF {args.sf:g} on Spark {spark.version} local[*], best of {args.repeat}\n")
        print("| query | flowsql→PySpark s | Spark SQL s | ratio | local engine s | verified |")
        print("|---|---:|---:|---:|---:|:---:|")
        for q, a, b, c, ok in rows:
            print(f"| Q{q} | {a:.3f} | {b:.3f} | {a / b:.2f} | {c:.3f} | {'yes' if ok else 'NO'} |")
        print(f"| total | {total_ours:.3f} | {total_spark:.3f} | {total_ours / total_spark:.2f} "
              f"| {total_local:.3f} | {sum(r[4] for r in rows)}/{len(rows)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
