"""Measured: after predicate ordering and migration an expensive UDF is called on fewer
rows, with the same result (the rules switched off through optimizer.disable-rules give the
baseline)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from tests.harness.operators import assert_rows, duck
from tests.udfs import counted

FACTS = pa.table({"k": pa.array(range(2000), pa.int64()),
                  "d": pa.array([i % 50 for i in range(2000)], pa.int64())})
DIMS = pa.table({"d": pa.array(range(50), pa.int64()),
                 "name": pa.array([f"n{i}" for i in range(50)])})


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[flowsql.Session]:
    root = Path(tmp_path_factory.mktemp("udf_placement"))
    session = flowsql.connect(**{"execution.batch-size": "256"})
    for name, table in (("facts", FACTS), ("dims", DIMS)):
        pq.write_table(table, root / f"{name}.parquet")
        session.sql(f"CREATE TABLE {name} WITH ('path' = '{root / name}.parquet')")
    session.register_function(counted.slow_odd)
    yield session
    session.close()


def _calls(session: flowsql.Session, sql: str, disabled: str) -> tuple[pa.Table, int]:
    session.set("optimizer.disable-rules", disabled)
    counted.ROWS.clear()
    try:
        result = session.sql(sql).to_arrow()
    finally:
        session.set("optimizer.disable-rules", "")
    return result, counted.ROWS["slow_odd"]


def test_ordering_runs_the_expensive_predicate_on_fewer_rows(session) -> None:  # type: ignore[no-untyped-def]
    sql = "SELECT k FROM facts WHERE slow_odd(k) AND k < 100"
    expected = duck("SELECT k FROM t WHERE k % 2 = 1 AND k < 100", t=FACTS)
    base, base_rows = _calls(session, sql, "order_predicates")
    ordered, ordered_rows = _calls(session, sql, "")
    assert_rows(base, expected)
    assert_rows(ordered, expected)
    assert base_rows == 2000
    assert ordered_rows == 100


def test_migration_runs_the_expensive_predicate_above_a_selective_join(session) -> None:  # type: ignore[no-untyped-def]
    sql = ("SELECT f.k, n.name FROM facts AS f JOIN dims AS n ON f.d = n.d "
           "WHERE slow_odd(f.k) AND n.name = 'n7'")
    expected = duck("SELECT f.k, n.name FROM f JOIN n ON f.d = n.d "
                    "WHERE f.k % 2 = 1 AND n.name = 'n7'", f=FACTS, n=DIMS)
    base, base_rows = _calls(session, sql, "migrate_predicates")
    lifted, lifted_rows = _calls(session, sql, "")
    assert_rows(base, expected)
    assert_rows(lifted, expected)
    assert base_rows == 2000  # below the join: every fact row
    assert lifted_rows == 40  # above it: the 40 facts of dimension 7
    plan = "\n".join(session.sql(f"EXPLAIN {sql}").to_arrow()["plan"].to_pylist())
    physical = plan[plan.index("== Physical Plan =="):].splitlines()
    assert physical[2].strip().startswith("Filter slow_odd(k) hints: "
                                          "slow_odd(cost_per_row=100)"), physical
