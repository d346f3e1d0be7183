"""Typical broken statements give a syntax error saying what was expected where: line:col
and a caret under the spot, in the reader's words (no parser class names or token reprs)."""

from __future__ import annotations

import pytest

import flowsql
from flowsql.errors import SqlSyntaxError

CASES = [
    ('SELECT * FROM',
     "syntax error: expected a table name after 'FROM' (the statement ends here) (line 1, col 14)\n  SELECT * FROM\n               ^"),
    ('SELECT (1 + 2',
     "syntax error: unclosed '(': expected ')' before the end of the statement (line 1, col 8)\n  SELECT (1 + 2\n         ^"),
    ("SELECT 'abc",
     "syntax error: unclosed string '...' (opened here, never closed) (line 1, col 8)\n  SELECT 'abc\n         ^"),
    ('SELECT "abc',
     'syntax error: unclosed quoted identifier "..." (opened here, never closed) (line 1, col 8)\n  SELECT "abc\n         ^'),
    ('SELECT 1 /* note',
     'syntax error: unclosed comment /* ... */ (opened here, never closed) (line 1, col 10)\n  SELECT 1 /* note\n           ^'),
    ('SELECT 1 +',
     "syntax error: expected an expression after '+' (the statement ends here) (line 1, col 11)\n  SELECT 1 +\n            ^"),
    ('SELECT a FROM t WHERE a = = 1',
     "syntax error: expected an expression but got '=' (line 1, col 27)\n  SELECT a FROM t WHERE a = = 1\n                            ^"),
    ('SELECT CASE WHEN a = 1 THEN 2',
     "syntax error: expected END in CASE after '2' (the statement ends here) (line 1, col 30)\n  SELECT CASE WHEN a = 1 THEN 2\n                               ^"),
    ('SELECT CASE END',
     "syntax error: expected WHEN after 'CASE' (line 1, col 12)\n  SELECT CASE END\n             ^"),
    ('WITH x AS (SELECT 1)',
     'syntax error: expected a query (SELECT ...) after the WITH clause (line 1, col 21)\n'
     '  WITH x AS (SELECT 1)\n                      ^'),
    ('SELECT a FROM t GROUP BY',
     "syntax error: expected an expression after 'GROUP BY' (the statement ends here) "
     "(line 1, col 25)\n  SELECT a FROM t GROUP BY\n                          ^"),
    ('SELECT * FROM t JOIN u ON',
     "syntax error: expected an expression after 'ON' (the statement ends here) "
     "(line 1, col 26)\n  SELECT * FROM t JOIN u ON\n                           ^"),
    ('SELECT a FROM t ORDER',
     "syntax error: expected BY after 'ORDER' (the statement ends here) "
     "(line 1, col 22)\n  SELECT a FROM t ORDER\n                       ^"),
    ('SELECT 1 AS',
     "syntax error: expected a name after 'AS' (the statement ends here) "
     "(line 1, col 12)\n  SELECT 1 AS\n             ^"),
    ('SELEC 1',
     "syntax error: expected a statement (SELECT, WITH, VALUES, INSERT, CREATE, DROP, EXPLAIN, SET, RESET, SHOW, DESCRIBE) but got 'SELEC' (did you mean SELECT?) (line 1, col 1)\n  SELEC 1\n  ^"),
    ('SELECT * FORM t',
     "syntax error: unexpected 't' after 'FORM' (did you mean FROM?) (line 1, col 10)\n  SELECT * FORM t\n           ^"),
    ('SELECT a\nFROM t\nWHERE',
     "syntax error: expected an expression after 'WHERE' (the statement ends here) (line 3, col 6)\n  WHERE\n       ^"),
    ('SELECT 1 FROM t LIMIT',
     "syntax error: expected an expression after 'LIMIT' (the statement ends here) (line 1, col 22)\n  SELECT 1 FROM t LIMIT\n                       ^"),
    ('SELECT a FROM t)',
     "syntax error: ')' without a matching opening one (line 1, col 16)\n  SELECT a FROM t)\n                 ^"),
    ('SELECT COUNT( FROM t',
     "syntax error: unclosed '(': expected ')' before the end of the statement (line 1, col 13)\n  SELECT COUNT( FROM t\n              ^"),
    ('SELECT a b c FROM t',
     "syntax error: unexpected 'c' (line 1, col 12)\n  SELECT a b c FROM t\n             ^"),
    ('SELECT CAST(a AS) FROM t',
     "syntax error: expected a type in CAST but got ')' (line 1, col 17)\n  SELECT CAST(a AS) FROM t\n                  ^"),
    ('INSERT INTO t VALUES (1,',
     "syntax error: unclosed '(': expected ')' before the end of the statement (line 1, col 22)\n  INSERT INTO t VALUES (1,\n                       ^"),
]


@pytest.mark.parametrize(("sql", "message"), CASES, ids=[c[0] for c in CASES])
def test_broken_statement_says_what_was_expected_where(sql: str, message: str) -> None:
    with pytest.raises(SqlSyntaxError) as error:
        flowsql.connect().sql(sql)
    assert str(error.value) == message


def test_position_is_in_the_script_for_a_later_statement() -> None:
    with pytest.raises(SqlSyntaxError) as error:
        list(flowsql.connect().run_script("SELECT 1;\nSELECT 2 +"))
    assert str(error.value) == ("syntax error: expected an expression after '+' (the "
                                "statement ends here) (line 2, col 11)\n  SELECT 2 +\n"
                                "            ^")
    assert (error.value.line, error.value.col) == (2, 11)
