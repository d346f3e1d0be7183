"""Where the scan's filters run: built-in filters with the decoding, on the read-ahead
thread; a filter calling a user function in the operator's thread, never beside it. The
rows are DuckDB's either way, including filters every row passes."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import flowsql
from tests.harness.operators import assert_rows, duck

DATA = pa.table({"k": pa.array(range(5000), pa.int64()),
                 "s": pa.array([f"v{i % 7}" for i in range(5000)])})
THREADS: set[str] = set()


@flowsql.udf(result_type="BOOLEAN")
def noted_odd(x: pa.Array) -> pa.Array:
    """x is odd; notes the thread that evaluated it."""
    THREADS.add(threading.current_thread().name)
    return pc.equal(pc.bit_wise_and(x, 1), 1)


def _session(tmp_path: Path) -> flowsql.Session:
    pq.write_table(DATA, tmp_path / "t.parquet", row_group_size=500)
    session = flowsql.connect(**{"execution.batch-size": "200"})
    session.sql(f"CREATE TABLE t WITH ('path' = '{tmp_path}/t.parquet', 'format' = 'parquet')")
    session.register_function(noted_odd)
    return session


def test_a_filter_calling_a_user_function_runs_in_the_operators_thread(tmp_path: Path) -> None:
    session = _session(tmp_path)
    sql = "SELECT k, s FROM t WHERE noted_odd(k) AND s <> 'v3'"
    plan = session.sql(f"EXPLAIN {sql}").to_arrow().column(0).to_pylist()
    assert "noted_odd" in next(line for line in plan if "TableScan" in line)
    THREADS.clear()
    assert_rows(session.sql(sql).to_arrow(),
                duck("SELECT k, s FROM t WHERE k % 2 = 1 AND s <> 'v3'", t=DATA))
    assert {threading.current_thread().name} == THREADS


def test_built_in_filters_on_many_row_groups_keep_exactly_duckdbs_rows(tmp_path: Path) -> None:
    session = _session(tmp_path)
    for where in ("k >= 0", "k % 3 = 1 AND s IN ('v1', 'v2')", "k < 0", "s LIKE 'v%'"):
        assert_rows(session.sql(f"SELECT k, s FROM t WHERE {where}").to_arrow(),
                    duck(f"SELECT k, s FROM t WHERE {where}", t=DATA))
