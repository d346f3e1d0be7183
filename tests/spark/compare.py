"""Run a plan on Spark and compare its full result with DuckDB's answer to the same SQL."""

from __future__ import annotations

import decimal
import math
from typing import Any

import duckdb
import pyarrow as pa

from flowsql.planner.physical import PhysicalPlan
from flowsql.planner.schema import to_arrow_schema
from flowsql.spark import run_plan
from tests.harness.spark import SPARK_TEST_SETTINGS


def _normal(value: Any) -> Any:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else round(value, 9)
    if isinstance(value, decimal.Decimal):
        return value.normalize()
    return value


def rows(table: pa.Table) -> list[tuple[Any, ...]]:
    columns = [c.to_pylist() for c in table.columns]
    return [tuple(_normal(v) for v in row) for row in zip(*columns)]


def _key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is None, str(v) if v is not None else "") for v in row)


def run(plan: PhysicalPlan, **settings: str) -> pa.Table:
    """run_plan, checking the result has exactly the plan's names and Arrow types."""
    result = run_plan(plan, {**SPARK_TEST_SETTINGS, **settings})
    expected = to_arrow_schema(plan.schema)
    assert result.schema.names == expected.names
    assert [f.type for f in result.schema] == [f.type for f in expected], result.schema
    return result


def assert_rows(actual: pa.Table, expected: pa.Table | list[tuple[Any, ...]],
                ordered: bool = False) -> None:
    got = rows(actual)
    want = rows(expected) if isinstance(expected, pa.Table) else [
        tuple(_normal(v) for v in row) for row in expected]
    if not ordered:
        got, want = sorted(got, key=_key), sorted(want, key=_key)
    diffs = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert len(got) == len(want) and not diffs, (
        f"{len(got)} vs {len(want)} rows; first differences (row, spark, duckdb): {diffs[:3]}")


def check(plan: PhysicalPlan, duck: duckdb.DuckDBPyConnection, sql: str,
          ordered: bool = False) -> pa.Table:
    """The plan's Spark result equals DuckDB's result of ``sql`` (as a multiset unless
    ``ordered``)."""
    result = run(plan)
    expected = duck.sql(sql).to_arrow_table()
    assert result.num_columns == expected.num_columns
    assert_rows(result, expected, ordered)
    return result
