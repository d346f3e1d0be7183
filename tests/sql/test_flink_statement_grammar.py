"""The Flink statement grammar (flink_statements.lark): every form it reads, which
statements it leaves to sqlglot, and its syntax errors with line:col of the script."""

from __future__ import annotations

from typing import Any

import pytest
from lark import UnexpectedInput

from flowsql.errors import SqlSyntaxError
from flowsql.sql.flink_statements import _HINTS, _hint, _parser, client_command
from flowsql.sql.function_statements import (
    CreateFunctionStatement,
    DropFunctionStatement,
    ShowFunctionsStatement,
)
from flowsql.sql.statement_parser import (
    AnalyzeStatement,
    CreateTableStatement,
    DescribeJobStatement,
    DescribeStatement,
    DropStatement,
    ExplainStatement,
    InsertStatement,
    QueryStatement,
    SetStatement,
    ShowJobsStatement,
    ShowTablesStatement,
    Statement,
    StatementSetStatement,
    StopJobStatement,
    parse_one,
    parse_statements,
    split_statements,
)
from flowsql.sql.statement_set import statement_set_end, statement_set_opening


def fields(statement: Statement) -> dict[str, Any]:
    return {k: v for k, v in vars(statement).items() if k not in ("text", "start", "end")}


@pytest.mark.parametrize(("text", "kind", "expected"), [
    # SET and RESET: quoted or bare keys and values, '' inside a string, comments anywhere
    ("SET", SetStatement, {"key": None, "value": None, "reset": False}),
    ("set 'a.b' = 'it''s'", SetStatement, {"key": "a.b", "value": "it's", "reset": False}),
    ("SET a.b-c = 500ms", SetStatement, {"key": "a.b-c", "value": "500ms", "reset": False}),
    ("SET a=b", SetStatement, {"key": "a", "value": "b", "reset": False}),
    ("SET 'k' = ''", SetStatement, {"key": "k", "value": "", "reset": False}),
    ("SET /* the mode */ 'execution.runtime-mode'\n  = 'streaming' -- for now",
     SetStatement, {"key": "execution.runtime-mode", "value": "streaming", "reset": False}),
    ("RESET", SetStatement, {"key": None, "value": None, "reset": True}),
    ("reset 'a.b'", SetStatement, {"key": "a.b", "value": None, "reset": True}),
    ("RESET a.b", SetStatement, {"key": "a.b", "value": None, "reset": True}),
    # SHOW
    ("SHOW TABLES", ShowTablesStatement, {}),
    ("show /* a /* nested */ comment */ jobs", ShowJobsStatement, {}),
    ("SHOW FUNCTIONS", ShowFunctionsStatement, {"user_only": False}),
    ("SHOW USER\n FUNCTIONS", ShowFunctionsStatement, {"user_only": True}),
    # jobs
    ("STOP JOB 'a1' WITH SAVEPOINT", StopJobStatement,
     {"job_id": "a1", "savepoint": True, "directory": None, "drain": False}),
    ("DESCRIBE JOB '7'", DescribeJobStatement, {"job_id": "7"}),
    ("desc job 'x'", DescribeJobStatement, {"job_id": "x"}),
    # DESCRIBE: TABLE and EXTENDED are optional; a table may be called extended or job
    ("DESCRIBE TABLE t", DescribeStatement, {"name": "t", "extended": False}),
    ("DESCRIBE \"my t\"", DescribeStatement, {"name": "my t", "extended": False}),
    ("DESCRIBE `my t`", DescribeStatement, {"name": "my t", "extended": False}),
    ("DESCRIBE db.t", DescribeStatement, {"name": "db.t", "extended": False}),
    ("DESCRIBE EXTENDED job", DescribeStatement, {"name": "job", "extended": True}),
    ("DESCRIBE job", DescribeStatement, {"name": "job", "extended": False}),
    ("DESCRIBE größe", DescribeStatement, {"name": "größe", "extended": False}),
    # ANALYZE: a column may have a keyword's name
    ("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS all, `for`", AnalyzeStatement,
     {"table": "t", "columns": ("all", "for"), "noscan": False, "table_at": 14,
      "column_at": (47, 52)}),
    # functions: a quoted keyword is a name
    ("CREATE FUNCTION `double` AS 'm.f'", CreateFunctionStatement,
     {"name": "double", "path": "m.f", "language": "PYTHON", "temporary": False,
      "system": False, "if_not_exists": False}),
    ("create function f as 'm.f' language Java", CreateFunctionStatement,
     {"name": "f", "path": "m.f", "language": "JAVA", "temporary": False, "system": False,
      "if_not_exists": False}),
    ("DROP SYSTEM FUNCTION \"F\"", DropFunctionStatement,
     {"name": "F", "temporary": False, "system": True, "if_exists": False}),
])
def test_forms(text: str, kind: type[Statement], expected: dict[str, Any]) -> None:
    statement = parse_one(text)
    assert type(statement) is kind
    assert fields(statement) == expected


@pytest.mark.parametrize(("text", "mode", "estimates", "explained"), [
    ("EXPLAIN SELECT 1", "plan", True, "SELECT 1"),
    ("explain plan for select 1", "plan", True, "SELECT 1"),
    ("EXPLAIN (COSTS OFF) SELECT 1", "plan", False, "SELECT 1"),
    ("EXPLAIN ( costs  on ) MEMO SELECT 1", "memo", True, "SELECT 1"),
    ("EXPLAIN (COSTS OFF) VERBOSE SELECT 1", "verbose", False, "SELECT 1"),
    ("EXPLAIN /* how */ PYSPARK\n  SELECT 1", "pyspark", True, "SELECT 1"),
    ("EXPLAIN ANALYZE INSERT INTO t SELECT 1", "analyze", True, "INSERT INTO t SELECT 1"),
    ("EXPLAIN (SELECT 1)", "plan", True, "(SELECT 1)"),
])
def test_explain_options(text: str, mode: str, estimates: bool, explained: str) -> None:
    statement = parse_one(text)
    assert isinstance(statement, ExplainStatement)
    assert (statement.mode, statement.estimates) == (mode, estimates)
    assert statement.ast.sql() == explained


@pytest.mark.parametrize(("text", "kind"), [
    ("CREATE TABLE t (a INT)", CreateTableStatement),
    ("CREATE TEMPORARY TABLE t (a INT)", CreateTableStatement),
    ("DROP TABLE IF EXISTS t", DropStatement),
    ("DROP VIEW v", DropStatement),
    ("SELECT 1 AS \"SET\"", QueryStatement),
])
def test_statements_the_grammar_leaves_to_sqlglot(text: str, kind: type[Statement]) -> None:
    assert type(parse_one(text)) is kind


def test_statements_of_a_script_keep_their_spans() -> None:
    text = "SET 'a' = '1';\nSHOW JOBS; RESET 'a' ;\nSELECT 1"
    statements = parse_statements(text)
    assert [type(s) for s in statements] == [SetStatement, ShowJobsStatement, SetStatement,
                                             QueryStatement]
    assert [s.source for s in statements] == ["SET 'a' = '1'", "SHOW JOBS", "RESET 'a'",
                                              "SELECT 1"]


@pytest.mark.parametrize(("text", "message", "line", "col"), [
    # the error points at the word that does not fit, in the script's lines
    ("SELECT 1;\nSET a.b\n  = 'x' y", "expected the end of the statement: SET", 3, 9),
    ("SET =", "expected a string or a setting key or the end of the statement", 1, 5),
    ("SET 'a'", "expected '='", 1, 8),
    ("SET a =", "expected the setting's value after '='", 1, 8),
    ("RESET 'x' y", "expected the end of the statement: RESET", 1, 11),
    ("SHOW CREATE TABLE t", "unsupported statement: SHOW CREATE; flowsql reads: SHOW TABLES",
     1, 6),
    ("SHOW TABLESX", "unsupported statement: SHOW TABLESX", 1, 6),
    ("SHOW", "unsupported statement: SHOW; flowsql reads", 1, 5),
    ("STOP", "expected JOB: STOP JOB '<id>'", 1, 5),
    ("STOP JOB '1' WITH DRAIN WITH   SAVEPOINT", "WITH SAVEPOINT comes before WITH DRAIN",
     1, 25),
    ("STOP JOB '1' WITH DRAIN WITH DRAIN", "expected the end of the statement", 1, 25),
    ("DESCRIBE", "expected the name of a table or view: DESCRIBE ", 1, 9),
    ("DESCRIBE JOB x", "expected DESCRIBE JOB '<id>'", 1, 14),
    ("DESCRIBE t u", "expected the end of the statement", 1, 12),
    ("ANALYZE TABLE t COMPUTE STATISTICS x",
     "expected FOR ALL COLUMNS or FOR COLUMNS or NOSCAN or the end of the statement", 1, 36),
    ("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS a b", "expected ',' or the end", 1, 50),
    ("CREATE FUNCTION f", "expected AS '<module.function>'", 1, 18),
    ("ANALYZE TABLE t COMPUTE STATISTICS FOR COLUMNS 1", "needs a column name", 1, 48),
    ("CREATE FUNCTION a.b AS 'm.f'", "a function name has no catalog or database part",
     1, 19),
    ("DROP FUNCTION date", "'date' is a SQL keyword and cannot name a function", 1, 15),
    ("CREATE FUNCTION f AS 'm.f' LANGUAGE 'python'", "expected a language after LANGUAGE",
     1, 37),
    ("BEGIN TRANSACTION", "expected STATEMENT SET: BEGIN STATEMENT SET;", 1, 7),
    ("EXECUTE x", "expected STATEMENT SET: EXECUTE STATEMENT SET BEGIN", 1, 9),
    ("EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1;\nEND x",
     "expected the end of the statement: BEGIN STATEMENT SET", 2, 5),
    ("END", "END closes no statement set", 1, 1),
    ("EXPLAIN", "EXPLAIN needs a query: EXPLAIN ", 1, 8),
    ("EXPLAIN (COSTS maybe) SELECT 1", r"expected EXPLAIN \(COSTS ON\|OFF\) <query>", 1, 16),
    ("EXPLAIN (COSTS OFF) MEMO SELECT 1", "COSTS OFF does not apply to EXPLAIN MEMO", 1, 21),
    # the statement explained is sqlglot's, with positions in the script
    ("SELECT 2;\nEXPLAIN VERBOSE SELEC 1", "did you mean SELECT", 2, 17),
])
def test_errors_say_what_was_expected_where(text: str, message: str, line: int,
                                            col: int) -> None:
    with pytest.raises(SqlSyntaxError, match=message) as caught:
        parse_statements(text)
    assert (caught.value.line, caught.value.col) == (line, col)


def test_an_execute_statement_set_keeps_the_first_insert_in_its_opening() -> None:
    text = "SET 'a' = 'b';\nEXECUTE STATEMENT SET BEGIN\n  INSERT INTO a SELECT 1;\n" \
           "  INSERT INTO b SELECT 2;\nEND;"
    setting, statement_set = parse_statements(text)
    assert isinstance(setting, SetStatement)
    assert isinstance(statement_set, StatementSetStatement)
    assert [type(i) for i in statement_set.inserts] == [InsertStatement, InsertStatement]
    assert [i.source for i in statement_set.inserts] == ["INSERT INTO a SELECT 1",
                                                         "INSERT INTO b SELECT 2"]
    assert statement_set.source.endswith("END")


def test_a_statement_set_is_not_one_statement() -> None:
    for text in ("BEGIN STATEMENT SET", "END"):
        with pytest.raises(SqlSyntaxError, match="a statement set spans several statements"):
            parse_one(text)


def test_openings_and_ends_of_statement_sets_never_raise() -> None:
    text = "BEGIN STATEMENT SET; EXECUTE STATEMENT SET BEGIN INSERT INTO a SELECT 1; " \
           "END; end; BEGIN; EXECUTE; SELECT 1"
    pieces = split_statements(text)
    assert [statement_set_opening(text, p) is not None for p in pieces] == [
        True, True, False, False, False, False, False]
    assert [statement_set_end(text, p) for p in pieces] == [
        False, False, True, True, False, False, False]


@pytest.mark.parametrize(("text", "command"), [
    ("help", "help"), ("HELP;", "help"), ("  Help ; ", "help"), ("\\?", "help"),
    ("\\h", "help"), ("\\H", "help"), ("quit", "quit"), ("QUIT;;", "quit"), ("exit", "quit"),
    ("\\q", "quit"), ("\\Q", "quit"),
    ("help me", None), ("\\d", None), ("SELECT 1", None), ("helpful", None), ("", None),
    ("'unclosed", None),
])
def test_client_commands(text: str, command: str | None) -> None:
    assert client_command(text) == command


@pytest.mark.parametrize(("hint", "example"),
                         [(hint, example) for hint, examples in _HINTS for example in examples])
def test_each_hint_is_what_its_examples_get(hint: str, example: str) -> None:
    """An example that parsed, or that another hint's example shadows, would make its hint
    dead text."""
    with pytest.raises(UnexpectedInput) as caught:
        _parser().parse(example, start="statement")
    assert _hint(caught.value) == hint
