"""Logical plan -> DuckDB SQL, so a plan before and after optimization can be run on the
oracle and compared: the rewrite is exact only if both give the same rows.

Every column is named ``c<id>``, so correlated references resolve by name in DuckDB exactly
as they do by id in the plan. Semi/anti/mark/single joins are spelled with EXISTS and
LEFT JOIN; null-aware joins spell out NOT IN / IN semantics (a comparison that is NULL
counts as "maybe a match").
"""

from __future__ import annotations

import datetime as dt
import itertools

from flowsql.planner import types as T
from flowsql.planner.expressions import (
    AggCall,
    Call,
    Case,
    Cast,
    ColumnRef,
    Exists,
    Expr,
    InSubquery,
    Literal,
    ScalarSubquery,
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

_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "eq": "=",
          "neq": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">=", "and": "AND",
          "or": "OR", "like": "LIKE"}
_names = itertools.count()


def to_sql(plan: LogicalPlan) -> str:
    """A query returning the plan's columns in schema order."""
    cols = ", ".join(f"c{f.cid}" for f in plan.schema)
    return f"SELECT {cols} FROM ({_sql(plan)}) AS {_alias()}"


def _alias() -> str:
    return f"t{next(_names)}"


def _from(plan: LogicalPlan) -> str:
    return f"({_sql(plan)}) AS {_alias()}"


def _sql(plan: LogicalPlan) -> str:
    if isinstance(plan, Scan):
        cols = ", ".join(f'"{f.name}" AS c{f.cid}' for f in plan.fields)
        inner = f"SELECT {cols} FROM {plan.table.name}"
        where = " AND ".join(expr(f) for f in plan.filters)
        return f"SELECT * FROM ({inner}) AS {_alias()}" + (f" WHERE {where}" if where else "")
    if isinstance(plan, Filter):
        return f"SELECT * FROM {_from(plan.input)} WHERE {expr(plan.predicate)}"
    if isinstance(plan, Project):
        items = ", ".join(f"{expr(e)} AS c{f.cid}" for e, f in zip(plan.exprs, plan.fields))
        return f"SELECT {items} FROM {_from(plan.input)}"
    if isinstance(plan, Aggregate):
        items = [f"{expr(e)} AS c{f.cid}" for e, f in zip(plan.group_exprs, plan.group_fields)]
        items += [f"{expr(a)} AS c{f.cid}" for a, f in zip(plan.aggs, plan.agg_fields)]
        group = (" GROUP BY " + ", ".join(expr(e) for e in plan.group_exprs)
                 if plan.group_exprs else "")
        return f"SELECT {', '.join(items)} FROM {_from(plan.input)}{group}"
    if isinstance(plan, Sort):
        return f"SELECT * FROM {_from(plan.input)} ORDER BY {_keys(plan)}"
    if isinstance(plan, Limit):
        # ORDER BY and LIMIT in one SELECT: a derived table's order is not guaranteed
        source, order = plan.input, ""
        if isinstance(source, Sort):
            source, order = source.input, f" ORDER BY {_keys(source)}"
        count = plan.limit if plan.limit is not None else "ALL"
        return f"SELECT * FROM {_from(source)}{order} LIMIT {count} OFFSET {plan.offset}"
    if isinstance(plan, Join):
        return _join(plan)
    raise NotImplementedError(type(plan).__name__)


def _keys(plan: Sort) -> str:
    return ", ".join(f"{expr(k.expr)} {'ASC' if k.ascending else 'DESC'} "
                     f"NULLS {'FIRST' if k.nulls_first else 'LAST'}" for k in plan.keys)


def _join(j: Join) -> str:
    cond = expr(j.condition) if j.condition is not None else "TRUE"
    left, right = _from(j.left), _from(j.right)
    if j.kind in ("inner", "cross", "left", "right", "full"):
        kind = "INNER" if j.kind == "cross" else j.kind.upper()
        return f"SELECT * FROM {left} {kind} JOIN {right} ON {cond}"
    if j.kind == "single":
        return f"SELECT * FROM {left} LEFT JOIN {right} ON {cond}"
    match = f"EXISTS (SELECT 1 FROM {right} WHERE {cond})"
    maybe = f"EXISTS (SELECT 1 FROM {_from(j.right)} WHERE ({cond}) IS NULL)"
    if j.kind == "semi":
        return f"SELECT * FROM {left} WHERE {match}"
    if j.kind == "anti":
        keep = f"NOT {match}" + (f" AND NOT {maybe}" if j.null_aware else "")
        return f"SELECT * FROM {left} WHERE {keep}"
    assert j.kind == "mark" and j.mark is not None
    value = (f"CASE WHEN {match} THEN TRUE WHEN {maybe} THEN NULL ELSE FALSE END"
             if j.null_aware else match)
    return f"SELECT *, {value} AS c{j.mark.cid} FROM {left}"


def expr(e: Expr) -> str:
    if isinstance(e, ColumnRef):
        return f"c{e.cid}"
    if isinstance(e, Literal):
        if e.value is None:
            return f"CAST(NULL AS {T.sql_name(e.dtype) if not T.is_null(e.dtype) else 'INTEGER'})"
        if isinstance(e.value, str):
            return "'" + e.value.replace("'", "''") + "'"
        if isinstance(e.value, bool):
            return "TRUE" if e.value else "FALSE"
        if isinstance(e.value, dt.date):
            return f"DATE '{e.value}'"
        return f"CAST({e.value} AS {T.sql_name(e.dtype)})"
    if isinstance(e, Cast):
        return f"CAST({expr(e.arg)} AS {T.sql_name(e.dtype)})"
    if isinstance(e, Case):
        whens = " ".join(f"WHEN {expr(c)} THEN {expr(v)}" for c, v in zip(e.conditions, e.values))
        return f"(CASE {whens} ELSE {expr(e.otherwise)} END)"
    if isinstance(e, AggCall):
        if e.name == "count_star":
            return "count(*)"
        return f"{e.name}({'DISTINCT ' if e.distinct else ''}{', '.join(expr(a) for a in e.args)})"
    if isinstance(e, Call):
        if e.name in _INFIX:
            return "(" + f" {_INFIX[e.name]} ".join(expr(a) for a in e.args) + ")"
        if e.name == "not":
            return f"(NOT {expr(e.args[0])})"
        if e.name == "is_null":
            return f"({expr(e.args[0])} IS NULL)"
        if e.name == "is_not_null":
            return f"({expr(e.args[0])} IS NOT NULL)"
        if e.name == "in_list":
            return f"({expr(e.args[0])} IN ({', '.join(expr(a) for a in e.args[1:])}))"
        if e.name.startswith("extract_"):
            return f"extract({e.name[8:]} FROM {expr(e.args[0])})"
        return f"{e.name}({', '.join(expr(a) for a in e.args)})"
    if isinstance(e, ScalarSubquery):
        return f"({_sql(e.plan)})"
    if isinstance(e, Exists):
        return f"EXISTS ({_sql(e.plan)})"
    if isinstance(e, InSubquery):
        return f"({expr(e.arg)} IN ({_sql(e.plan)}))"
    raise NotImplementedError(type(e).__name__)
