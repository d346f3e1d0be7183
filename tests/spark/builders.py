"""A small builder for physical plans in Spark backend tests.

Types are derived with the planner's own typing rules (``flowsql.planner.types``) so a
hand-built plan carries the same types the binder would give it.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import AggCall, Call, ColumnRef, Expr, Literal
from flowsql.planner.physical import PhysicalPlan, ProjectExec, TableScanExec
from flowsql.planner.schema import Field

_ARITHMETIC = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "modulo": "%"}
_BOOLEAN = {"eq", "neq", "lt", "lte", "gt", "gte", "and", "or", "not", "is_null",
            "is_not_null", "is_distinct_from", "is_not_distinct_from", "in_list", "like",
            "ilike", "starts_with", "ends_with", "contains", "regexp_matches", "is_true",
            "is_false"}


def scan(entry: TableEntry, est_rows: float = 100.0, filters: tuple[Expr, ...] = ()
         ) -> TableScanExec:
    fields = tuple(Field.fresh(f.name, T.normalize_storage_type(f.type)) for f in entry.schema)
    node = TableScanExec(entry, fields, (), est_rows)
    if filters:
        node = TableScanExec(entry, fields, tuple(f(node) for f in filters), est_rows)
    return node


def col(node: PhysicalPlan, name: str) -> ColumnRef:
    matches = [f for f in node.schema if f.name == name]
    assert len(matches) == 1, f"{name} in {[f.name for f in node.schema]}"
    return matches[0].ref()


def lit(value: Any, dtype: pa.DataType) -> Literal:
    return Literal(value, dtype)


def call(name: str, *args: Expr, dtype: pa.DataType | None = None) -> Call:
    if dtype is None:
        if name in _ARITHMETIC:
            dtype = T.arithmetic_type(_ARITHMETIC[name], args[0].dtype, args[1].dtype)
        elif name in _BOOLEAN:
            dtype = T.BOOL
        else:
            dtype = args[0].dtype
    assert dtype is not None
    return Call(name, tuple(args), dtype)


def agg(name: str, *args: Expr, distinct: bool = False, filter: Expr | None = None) -> AggCall:
    from flowsql.sql.functions import aggregate_type

    dtype = aggregate_type(name, [a.dtype for a in args])
    assert dtype is not None
    return AggCall(name, tuple(args), dtype, distinct, filter)


def project(node: PhysicalPlan, *items: tuple[str, Expr]) -> ProjectExec:
    fields = tuple(Field.fresh(name, e.dtype) for name, e in items)
    return ProjectExec(node, tuple(e for _, e in items), fields, node.est_rows)


def fields_for(*items: tuple[str, pa.DataType]) -> tuple[Field, ...]:
    return tuple(Field.fresh(name, dtype) for name, dtype in items)
