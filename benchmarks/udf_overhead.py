"""What a vectorized Python scalar UDF costs next to the built-in expression it computes.

The UDF (``udf_functions.twice``) runs ``pyarrow.compute.multiply(x, 2)``, the kernel the
built-in ``x * 2`` runs too, so the difference is the UDF call path: importing by path
(once), one Python call per batch, and the checks of the result's length and type. Both
queries scan the same Parquet file of ``--rows`` BIGINT values and sum the products, at
parallelism 1; each is run ``--repeat`` times and the best time is kept.

    PYTHONPATH=. python benchmarks/udf_overhead.py [--rows 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import flowsql

QUERIES = {"built-in x * 2": "SELECT sum(x * 2) FROM t",
           "UDF twice(x)": "SELECT sum(twice(x)) FROM t"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="flowsql-udf-bench-") as directory:
        path = Path(directory) / "t.parquet"
        values = np.random.default_rng(7).integers(0, 1_000_000, args.rows, dtype=np.int64)
        pq.write_table(pa.table({"x": values}), path)
        session = flowsql.connect(parallelism=1)
        session.sql(f"CREATE TABLE t WITH ('path' = '{path}')")
        session.sql("CREATE FUNCTION twice AS 'udf_functions.twice'")
        expected = int(values.sum()) * 2
        best: dict[str, float] = {}
        for label, query in QUERIES.items():
            for _ in range(args.repeat):
                started = time.perf_counter()
                total = session.sql(query).to_arrow().column(0)[0].as_py()
                elapsed = time.perf_counter() - started
                assert total == expected, (label, total, expected)
                best[label] = min(best.get(label, elapsed), elapsed)
        session.close()
    print(f"| query ({args.rows:,} rows) | best of {args.repeat} (s) | rows/s |")
    print("|---|---|---|")
    for label, seconds in best.items():
        print(f"| {label} | {seconds:.3f} | {args.rows / seconds:,.0f} |")
    builtin, udf = best["built-in x * 2"], best["UDF twice(x)"]
    print(f"\nUDF / built-in time: {udf / builtin:.2f}x")


if __name__ == "__main__":
    main()
