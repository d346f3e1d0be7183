"""Parsing ANALYZE TABLE in Spark's and Flink's spelling, and DESCRIBE EXTENDED."""

from __future__ import annotations

import pytest

from flowsql.errors import SqlSyntaxError
from flowsql.sql.statement_parser import AnalyzeStatement, DescribeStatement, parse_one


@pytest.mark.parametrize(("sql", "table", "columns", "noscan"), [
    ("ANALYZE TABLE t", "t", None, False),
    ("analyze table T compute statistics;", "T", None, False),
    ("ANALYZE TABLE t COMPUTE STATISTICS NOSCAN", "t", None, True),
    ("ANALYZE TABLE t COMPUTE STATISTICS FOR ALL COLUMNS", "t", None, False),
    ("ANALYZE TABLE `my t` COMPUTE STATISTICS FOR COLUMNS a, \"B c\", date",
     "my t", ("a", "B c", "date"), False),
])
def test_forms(sql: str, table: str, columns: tuple[str, ...] | None, noscan: bool) -> None:
    statement = parse_one(sql)
    assert isinstance(statement, AnalyzeStatement)
    assert (statement.table, statement.columns, statement.noscan) == (table, columns, noscan)


def test_name_offsets_point_at_the_names() -> None:
    sql = "ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS a, bb"
    statement = parse_one(sql)
    assert isinstance(statement, AnalyzeStatement)
    assert sql[statement.table_at] == "t"
    assert [sql[at:at + 2] for at in statement.column_at] == ["a,", "bb"]


@pytest.mark.parametrize(("sql", "message", "col"), [
    ("ANALYZE t", "expected TABLE after ANALYZE", 9),
    ("ANALYZE TABLE", "needs a table name", 14),
    ("ANALYZE TABLE t FOR COLUMNS a", "expected COMPUTE STATISTICS", 17),
    ("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS", "needs a column name", 47),
    ("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS a,", "needs a column name", 50),
    ("ANALYZE TABLE t COMPUTE STATISTICS NOSCAN x", "or the end of the statement", 43),
])
def test_errors_point_at_what_does_not_fit(sql: str, message: str, col: int) -> None:
    with pytest.raises(SqlSyntaxError, match=message) as caught:
        parse_one(sql)
    assert (caught.value.line, caught.value.col) == (1, col)
    assert "ANALYZE TABLE <name> [COMPUTE STATISTICS" in str(caught.value)


@pytest.mark.parametrize(("sql", "name", "extended"), [
    ("DESCRIBE t", "t", False),
    ("DESCRIBE EXTENDED t", "t", True),
    ("DESC EXTENDED t", "t", True),
    ("DESCRIBE TABLE EXTENDED t", "t", True),
    ("DESCRIBE extended", "extended", False),  # a table named extended
])
def test_describe_extended(sql: str, name: str, extended: bool) -> None:
    statement = parse_one(sql)
    assert isinstance(statement, DescribeStatement)
    assert (statement.name, statement.extended) == (name, extended)
