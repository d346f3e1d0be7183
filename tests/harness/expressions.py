"""Shared helpers for evaluator tests: build typed expressions over a small Arrow table,
evaluate them with the runtime, and evaluate the same SQL with DuckDB over the same table."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import duckdb
import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.expressions import Call, ColumnRef, Expr, Literal
from flowsql.planner.schema import Field
from flowsql.runtime.expressions import compile_expr

TABLE = pa.table({
    "i": pa.array([1, -7, None, 0, 42, 9], pa.int64()),
    "j": pa.array([3, 2, 5, None, -4, 9], pa.int64()),
    "k": pa.array([7, -7, 3, 2, None, 0], pa.int32()),
    "f": pa.array([1.5, -2.5, None, 0.0, 2.5, 1e20], pa.float64()),
    "d": pa.array([Decimal("1.50"), Decimal("-2.25"), Decimal("3.00"), None, Decimal("0.05"),
                   Decimal("-0.15")], pa.decimal128(15, 2)),
    "e": pa.array([Decimal("0.06"), Decimal("0.10"), None, Decimal("0.02"), Decimal("0.00"),
                   Decimal("0.04")], pa.decimal128(15, 2)),
    "s": pa.array(["hello", "Héllo wörld", None, "", "  pad  ", "a%b_c\\d"], pa.string()),
    "t": pa.array(["l", "wö", "x", None, "pad", "%"], pa.string()),
    "b": pa.array([True, False, None, True, False, None], pa.bool_()),
    "c": pa.array([None, True, None, False, False, True], pa.bool_()),
    "dt": pa.array([dt.date(2024, 1, 31), dt.date(1995, 3, 15), None, dt.date(2000, 2, 29),
                    dt.date(2023, 12, 31), dt.date(2021, 1, 1)], pa.date32()),
    "ts": pa.array([dt.datetime(2024, 1, 31, 10, 11, 12, 500000), dt.datetime(1995, 3, 15),
                    None, dt.datetime(2000, 2, 29, 23, 59, 59),
                    dt.datetime(2023, 12, 31, 0, 0, 1), dt.datetime(2021, 1, 1, 12)],
                   pa.timestamp("us")),
})
FIELDS = tuple(Field.fresh(name, TABLE.schema.field(name).type) for name in TABLE.column_names)
BY_NAME = {f.name: f for f in FIELDS}
BATCH = TABLE.to_batches()[0]
_DUCK = duckdb.connect()
_DUCK.register("t_input", TABLE)


def col(name: str) -> ColumnRef:
    return BY_NAME[name].ref()


def lit(value: Any, dtype: pa.DataType | None = None) -> Literal:
    if dtype is None:
        if isinstance(value, bool):
            dtype = T.BOOL
        elif isinstance(value, int):
            dtype = T.INT64
        elif isinstance(value, float):
            dtype = T.FLOAT64
        elif isinstance(value, str):
            dtype = T.STRING
        elif isinstance(value, dt.date):
            dtype = T.DATE
        else:
            raise TypeError(value)
    return Literal(value, dtype)


def call(name: str, dtype: pa.DataType, *args: Expr) -> Call:
    return Call(name, tuple(args), dtype)


def evaluate(expr: Expr) -> pa.Array:
    result = compile_expr(expr, FIELDS)(BATCH)
    assert result.type.equals(expr.dtype), (result.type, expr.dtype)
    assert len(result) == BATCH.num_rows
    return result


def duck(sql: str, dtype: pa.DataType | None = None) -> list[Any]:
    """DuckDB's values of ``sql`` over the same rows (cast to ``dtype`` when given)."""
    column = _DUCK.sql(f"SELECT {sql} AS r FROM t_input").to_arrow_table().column("r")
    if dtype is not None and not column.type.equals(dtype):
        column = column.cast(dtype, safe=False)
    return column.to_pylist()


def same(a: list[Any], b: list[Any]) -> bool:
    """Equality that treats NaN as equal to NaN."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, float) and isinstance(y, float) and x != x and y != y:
            continue
        if x != y:
            return False
    return True
