"""Drive one operator over hand-made batches and compare results with DuckDB.

``leaf`` turns an Arrow table into a schema-carrying input node plus its batches (two
rows each, so every operator sees several batches); ``drive`` runs the operator through
its documented call order; ``duck`` runs the equivalent SQL on DuckDB over the same
Arrow tables; ``assert_rows`` compares full results (as multisets unless ordered).
"""

from __future__ import annotations

import decimal
import math
from typing import Any

import duckdb
import pyarrow as pa

from flowsql.planner.physical import PhysicalPlan, ValuesExec
from flowsql.planner.schema import Field, Schema, to_arrow_schema
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.operators.contract import Source
from flowsql.runtime.registry import create_operator


def leaf(table: pa.Table, chunk: int = 2) -> tuple[ValuesExec, list[pa.RecordBatch]]:
    fields: Schema = tuple(Field.fresh(f.name, f.type) for f in table.schema)
    node = ValuesExec(fields, (), float(table.num_rows))
    return node, table.to_batches(max_chunksize=chunk)


def drive(node: PhysicalPlan, *inputs: list[pa.RecordBatch],
          settings: dict[str, str] | None = None,
          budget: int | None = None) -> pa.Table:
    operator = create_operator(node)
    operator.open(OperatorContext("test", settings or {"execution.batch-size": "3"},
                                  MemoryBudget(budget)))
    out: list[pa.RecordBatch] = []
    if isinstance(operator, Source):
        out.extend(operator.produce())
    for index in operator.input_order or range(len(inputs)):
        for batch in inputs[index]:
            out.extend(operator.process_batch(index, batch))
        out.extend(operator.end_input(index))
    operator.close()
    schema = to_arrow_schema(node.schema)
    if not node.schema:
        return pa.Table.from_batches(out) if out else pa.table({})
    return pa.Table.from_batches(
        [pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in out], schema=schema)


def duck(sql: str, **tables: pa.Table) -> pa.Table:
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    return con.sql(sql).to_arrow_table()


def _norm(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 9)
    if isinstance(value, decimal.Decimal):
        return value.normalize()
    return value


def _key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((v is None, type(v).__name__, v if v is not None else 0) for v in row)


def rows(table: pa.Table, ordered: bool = False) -> list[tuple[Any, ...]]:
    columns = [c.to_pylist() for c in table.columns]
    out = [tuple(_norm(c[i]) for c in columns) for i in range(table.num_rows)]
    return out if ordered else sorted(out, key=_key)


def assert_rows(actual: pa.Table, expected: pa.Table, ordered: bool = False) -> None:
    assert actual.num_rows == expected.num_rows, (actual, expected)
    assert rows(actual, ordered) == rows(expected, ordered)
