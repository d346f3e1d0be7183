"""Parsing CREATE FUNCTION, DROP FUNCTION and SHOW [USER] FUNCTIONS (Flink's forms)."""

from __future__ import annotations

import pytest

from flowsql.errors import SqlSyntaxError
from flowsql.sql.function_statements import (
    CreateFunctionStatement,
    DropFunctionStatement,
    ShowFunctionsStatement,
)
from flowsql.sql.statement_parser import parse_one


def test_create_function_forms() -> None:
    full = parse_one("create temporary system function if not exists F as 'a.b.c' "
                     "language python;")
    assert isinstance(full, CreateFunctionStatement)
    assert (full.name, full.path, full.language, full.temporary, full.system,
            full.if_not_exists) == ("F", "a.b.c", "PYTHON", True, True, True)
    plain = parse_one("CREATE FUNCTION f AS 'm.f'")
    assert isinstance(plain, CreateFunctionStatement)
    assert (plain.language, plain.temporary, plain.if_not_exists) == ("PYTHON", False, False)
    java = parse_one("CREATE FUNCTION f AS 'com.x.F' LANGUAGE JAVA")
    assert isinstance(java, CreateFunctionStatement) and java.language == "JAVA"


def test_drop_and_show_function_forms() -> None:
    drop = parse_one("DROP TEMPORARY FUNCTION IF EXISTS f")
    assert isinstance(drop, DropFunctionStatement)
    assert (drop.name, drop.temporary, drop.if_exists) == ("f", True, True)
    show = parse_one("SHOW FUNCTIONS")
    assert isinstance(show, ShowFunctionsStatement) and not show.user_only
    user = parse_one("show user functions")
    assert isinstance(user, ShowFunctionsStatement) and user.user_only


@pytest.mark.parametrize(("text", "message", "col"), [
    ("CREATE FUNCTION", "expected the function's name", 16),
    ("CREATE FUNCTION f 'm.f'", "expected AS '<module.function>'", 19),
    ("CREATE FUNCTION f AS m.f", "expected the function's import path as a string", 22),
    ("CREATE FUNCTION f AS 'm.f' LANGUAGE", "expected a language after LANGUAGE", 36),
    ("CREATE FUNCTION f AS 'm.f' PYTHON", "expected the end of the statement", 28),
    ("CREATE FUNCTION double AS 'm.f'", "'double' is a SQL keyword", 17),
    ("DROP FUNCTION f g", "expected the end of the statement", 17),
])
def test_errors_point_at_the_token_that_does_not_fit(text: str, message: str,
                                                     col: int) -> None:
    with pytest.raises(SqlSyntaxError, match=message) as error:
        parse_one(text)
    assert (error.value.line, error.value.col) == (1, col)
