"""Run a plan before and after optimization on DuckDB and compare the rows."""

from __future__ import annotations

from typing import Any

import duckdb

from flowsql.optimizer import optimize
from flowsql.planner.logical import LogicalPlan

from .plan_sql import to_sql

# Small tables with NULLs in every column a predicate reads: NULL semantics are where
# subquery rewrites usually go wrong.
TABLES = {
    "t": ("a BIGINT, b BIGINT, s VARCHAR",
          [(1, 10, "x"), (2, 20, "y"), (3, None, "z"), (None, 40, "x"), (5, 50, None),
           (6, 60, "y")]),
    "u": ("x BIGINT, y BIGINT, z VARCHAR",
          [(1, 10, "x"), (1, 11, "x"), (2, None, "y"), (3, 30, None), (None, 5, "q"),
           (7, 70, "y")]),
    "v": ("k BIGINT, w BIGINT", [(1, 100), (2, 200), (7, 700)]),
}


def connection() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name, (columns, rows) in TABLES.items():
        con.execute(f"CREATE TABLE {name} ({columns})")
        if rows:
            marks = ", ".join("?" for _ in rows[0])
            con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)
    return con


def rows(con: duckdb.DuckDBPyConnection, plan: LogicalPlan) -> list[tuple[Any, ...]]:
    result = con.execute(to_sql(plan)).fetchall()
    return sorted(result, key=lambda r: tuple((v is None, str(v)) for v in r))


def assert_optimized_same(con: duckdb.DuckDBPyConnection, plan: LogicalPlan,
                          settings: dict[str, str] | None = None) -> LogicalPlan:
    """Optimize ``plan``; assert both plans give the same rows; return the optimized plan."""
    optimized = optimize(plan, settings or {}).plan
    expected = rows(con, plan)
    assert rows(con, optimized) == expected
    return optimized
