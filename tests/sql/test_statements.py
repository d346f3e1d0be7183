"""Statement splitting and parsing: kinds, options, positions."""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.errors import SqlSyntaxError
from flowsql.sql.statement_parser import (
    CreateTableStatement,
    CreateViewStatement,
    DescribeStatement,
    DropStatement,
    ExplainStatement,
    QueryStatement,
    SetStatement,
    ShowTablesStatement,
    parse_one,
    parse_statements,
)


def test_script_splits_at_top_level_semicolons_only() -> None:
    stmts = parse_statements("select 'a;b' as x; -- c;d\nselect 2;;")
    assert [type(s) for s in stmts] == [QueryStatement, QueryStatement]
    assert stmts[0].source == "select 'a;b' as x"


def test_create_table_with_columns_and_options() -> None:
    s = parse_one("CREATE TABLE t (a INT NOT NULL, b DECIMAL(15, 2), c VARCHAR, d DATE, "
                  "e TIMESTAMP(3)) WITH ('connector' = 'filesystem', 'path' = '/x', "
                  "'format' = 'csv')")
    assert isinstance(s, CreateTableStatement)
    assert s.name == "t"
    assert [(c.name, c.dtype, c.nullable) for c in s.columns or ()] == [
        ("a", pa.int32(), False), ("b", pa.decimal128(15, 2), True), ("c", pa.string(), True),
        ("d", pa.date32(), True), ("e", pa.timestamp("ms"), True)]
    assert s.options == {"connector": "filesystem", "path": "/x", "format": "csv"}


def test_create_table_without_columns() -> None:
    s = parse_one("create table if not exists t with ('path'='/p.parquet')")
    assert isinstance(s, CreateTableStatement)
    assert s.columns is None and s.if_not_exists


@pytest.mark.parametrize("text,kind,attrs", [
    ("SHOW TABLES", ShowTablesStatement, {}),
    ("DESCRIBE lineitem", DescribeStatement, {"name": "lineitem"}),
    ("DESC lineitem", DescribeStatement, {"name": "lineitem"}),
    ("SET 'execution.memory-budget' = '1gb'", SetStatement,
     {"key": "execution.memory-budget", "value": "1gb"}),
    ("SET parallelism.default = 2", SetStatement, {"key": "parallelism.default", "value": "2"}),
    ("SET", SetStatement, {"key": None}),
    ("RESET 'a.b'", SetStatement, {"key": "a.b", "reset": True}),
    ("DROP TABLE IF EXISTS t", DropStatement, {"kind": "table", "name": "t", "if_exists": True}),
    ("DROP VIEW v", DropStatement, {"kind": "view", "name": "v", "if_exists": False}),
    ("CREATE VIEW v (x) AS SELECT 1", CreateViewStatement, {"name": "v", "column_names": ("x",)}),
    ("EXPLAIN SELECT 1", ExplainStatement, {"mode": "plan"}),
    ("EXPLAIN VERBOSE SELECT 1", ExplainStatement, {"mode": "verbose"}),
    ("EXPLAIN MEMO SELECT 1", ExplainStatement, {"mode": "memo"}),
    ("EXPLAIN PLAN FOR SELECT 1", ExplainStatement, {"mode": "plan"}),
])
def test_statement_kinds(text: str, kind: type, attrs: dict) -> None:
    s = parse_one(text)
    assert isinstance(s, kind)
    for key, value in attrs.items():
        assert getattr(s, key) == value


def test_syntax_error_names_line_and_column_with_caret() -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse_one("select a\nfrom where")
    err = info.value
    assert (err.line, err.col) == (2, 6)
    assert str(err).endswith("  from where\n       ^")


def test_syntax_error_positions_refer_to_the_whole_script() -> None:
    with pytest.raises(SqlSyntaxError) as info:
        parse_statements("select 1;\nselect 2;\nselect from from")
    assert info.value.line == 3


def test_parse_one_rejects_two_statements() -> None:
    with pytest.raises(SqlSyntaxError, match="only one statement"):
        parse_one("select 1; select 2")


def test_unterminated_string_is_a_syntax_error() -> None:
    with pytest.raises(SqlSyntaxError):
        parse_one("select 'abc")
