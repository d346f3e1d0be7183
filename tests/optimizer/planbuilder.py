"""A tiny builder of logical plans for optimizer tests, standing in for the binder.

Tables are ``TableEntry`` values with an Arrow schema and a row count; every scan gets
fresh column ids, so a table scanned twice is two independent relations (as in SQL).
Columns are looked up by name in a plan's schema (or, for correlated references, in the
schema of the outer plan passed explicitly).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry, TableStatistics
from flowsql.planner.expressions import (
    AggCall,
    Call,
    ColumnRef,
    Exists,
    Expr,
    InSubquery,
    Literal,
    ScalarSubquery,
    SortKey,
)
from flowsql.planner.logical import (
    Aggregate,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    Scan,
    Sort,
)
from flowsql.planner.schema import Field


def table(name: str, rows: int | None = None, **columns: pa.DataType) -> TableEntry:
    schema = pa.schema([pa.field(c, t) for c, t in columns.items()])
    return TableEntry(name, schema, {"path": f"{name}.parquet"}, TableStatistics(rows))


def scan(entry: TableEntry, nullable: bool = True) -> Scan:
    fields = tuple(Field.fresh(f.name, f.type, nullable) for f in entry.schema)
    return Scan(entry, fields)


def col(plan: LogicalPlan, name: str) -> ColumnRef:
    matches = [f for f in plan.schema if f.name == name]
    assert len(matches) == 1, f"{name} matches {len(matches)} columns"
    return matches[0].ref()


def lit(value: Any, dtype: pa.DataType | None = None) -> Literal:
    if dtype is None:
        dtype = T.BOOL if isinstance(value, bool) else T.INT64 if isinstance(value, int) \
            else T.STRING if isinstance(value, str) else T.NULL
    return Literal(value, dtype)


def call(name: str, *args: Expr, dtype: pa.DataType = T.BOOL) -> Call:
    return Call(name, tuple(args), dtype)


def eq(a: Expr, b: Expr) -> Call:
    return call("eq", a, b)


def gt(a: Expr, b: Expr) -> Call:
    return call("gt", a, b)


def and_(*args: Expr) -> Call:
    return call("and", *args)


def or_(*args: Expr) -> Call:
    return call("or", *args)


def not_(a: Expr) -> Call:
    return call("not", a)


def add(a: Expr, b: Expr) -> Call:
    return call("add", a, b, dtype=T.INT64)


def filter_(plan: LogicalPlan, predicate: Expr) -> Filter:
    return Filter(plan, predicate)


def project(plan: LogicalPlan, **exprs: Expr) -> Project:
    fields = tuple(Field.fresh(name, e.dtype) for name, e in exprs.items())
    return Project(plan, tuple(exprs.values()), fields)


def select(plan: LogicalPlan, *names: str) -> Project:
    """Project columns of ``plan`` by name under fresh ids (as the binder's select list)."""
    return project(plan, **{n: col(plan, n) for n in names})


def cross(*plans: LogicalPlan) -> LogicalPlan:
    out = plans[0]
    for p in plans[1:]:
        out = Join(out, p, "cross")
    return out


def join(left: LogicalPlan, right: LogicalPlan, kind: str, condition: Expr) -> Join:
    return Join(left, right, kind, condition)


def agg(name: str, *args: Expr, dtype: pa.DataType = T.INT64) -> AggCall:
    return AggCall(name, tuple(args), dtype)


def aggregate(plan: LogicalPlan, groups: list[str], **aggs: AggCall) -> Aggregate:
    group_exprs = tuple(col(plan, g) for g in groups)
    group_fields = tuple(Field.fresh(g, e.dtype) for g, e in zip(groups, group_exprs))
    agg_fields = tuple(Field.fresh(n, a.dtype) for n, a in aggs.items())
    return Aggregate(plan, group_exprs, group_fields, tuple(aggs.values()), agg_fields)


def sort(plan: LogicalPlan, *names: str) -> Sort:
    return Sort(plan, tuple(SortKey(col(plan, n)) for n in names))


def limit(plan: LogicalPlan, n: int) -> Limit:
    return Limit(plan, n)


def exists(plan: LogicalPlan) -> Exists:
    return Exists(plan)


def in_(arg: Expr, plan: LogicalPlan) -> InSubquery:
    return InSubquery(arg, plan)


def scalar(plan: LogicalPlan) -> ScalarSubquery:
    return ScalarSubquery(plan, plan.schema[0].dtype)
