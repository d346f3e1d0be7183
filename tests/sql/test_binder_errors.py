"""Binder errors name the problem, the place (line:col with a caret) and a suggestion."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.errors import BindError
from flowsql.planner.catalog import Catalog, TableEntry
from flowsql.sql.bind_query import QueryBinder
from flowsql.sql.statement_parser import QueryStatement, parse_one


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    cat = Catalog()
    cat.add(TableEntry("orders", pa.schema([("o_orderkey", pa.int64()),
                                            ("o_custkey", pa.int64()),
                                            ("o_comment", pa.string()),
                                            ("o_orderdate", pa.date32())])))
    cat.add(TableEntry("customer", pa.schema([("c_custkey", pa.int64()),
                                              ("c_name", pa.string())])))
    return cat


def bind(catalog: Catalog, sql: str):  # type: ignore[no-untyped-def]
    stmt = parse_one(sql)
    assert isinstance(stmt, QueryStatement)
    return QueryBinder(catalog, sql).bind(stmt.ast)


@pytest.mark.parametrize("sql,message,pos", [
    ("select o_orderky from orders", "column 'o_orderky' not found; did you mean 'o_orderkey'?",
     (1, 8)),
    ("select *\nfrom order", "table 'order' not found; did you mean 'orders'?", (2, 6)),
    ("select x.o_orderkey from orders o", "table or alias 'x' not found in FROM", (1, 8)),
    ("select o_comment, count(*) from orders",
     "column 'o_comment' must appear in the GROUP BY clause", (1, 8)),
    ("select o_comment + 1 from orders", "cannot apply '+' to VARCHAR and INTEGER", (1, 8)),
    ("select 1 from orders where o_orderkey", "expected a boolean expression", (1, 28)),
    ("select 1 from orders where sum(o_orderkey) > 1", "aggregate functions are not allowed in WHERE",
     None),
    ("select c_custkey from orders, customer where o_custkey = c_custkey order by 3",
     "ORDER BY position 3 is not in the select list", None),
    ("select frobnicate(o_orderkey) from orders", "unknown function 'frobnicate'", (1, 19)),
    ("select o_orderkey from orders where o_orderkey in (select c_custkey, c_name from customer)",
     "subquery of IN must return one column", None),
    ("select 1 union select 1, 2", "UNION: the inputs have 1 and 2 columns", None),
    ("select o_orderdate = 1 from orders", "cannot compare DATE with INTEGER", (1, 8)),
    ("select row_number() from orders", "needs an OVER clause", None),
    ("select o_custkey from orders, customer where o_custkey = c_custkey and "
     "o_custkey = custkey", "column 'custkey' not found", None),
])
def test_bind_errors(catalog: Catalog, sql: str, message: str, pos: tuple[int, int] | None) -> None:
    with pytest.raises(BindError) as info:
        bind(catalog, sql)
    assert message in str(info.value)
    if pos is not None:
        assert (info.value.line, info.value.col) == pos
        line = sql.splitlines()[pos[0] - 1]
        assert f"\n  {line}\n  {' ' * (pos[1] - 1)}^" in str(info.value)


def test_ambiguous_column(catalog: Catalog) -> None:
    with pytest.raises(BindError, match="ambiguous"):
        bind(catalog, "select o_orderkey from orders a, orders b")


def test_output_schema_types(catalog: Catalog) -> None:
    plan = bind(catalog, "select o_orderkey + 1 as k, o_orderkey / 2 as h, count(*) as n, "
                         "o_orderdate + interval '1' month as d from orders group by 1, 2, 4")
    assert [(f.name, f.dtype) for f in plan.schema] == [
        ("k", pa.int64()), ("h", pa.float64()), ("n", pa.int64()), ("d", pa.date32())]


def test_decimal_arithmetic_types_are_exact() -> None:
    cat = Catalog()
    cat.add(TableEntry("l", pa.schema([("p", pa.decimal128(15, 2)), ("d", pa.decimal128(15, 2))])))
    plan = bind(cat, "select p * (1 - d), p * (1 - d) * (1 + d) from l")
    assert [f.dtype for f in plan.schema] == [pa.decimal128(31, 4), pa.decimal128(38, 6)]
    plan = bind(cat, "select sum(p * (1 - d)), avg(p), sum(p) from l")
    assert [f.dtype for f in plan.schema] == [pa.decimal128(38, 4), pa.float64(),
                                              pa.decimal128(38, 2)]
