"""Tab completion on complete and incomplete SQL, against a real session's catalog."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

import flowsql
from flowsql.planner.config.settings import SETTINGS
from flowsql.session import Session
from flowsql.shell.completion import SqlCompleter
from flowsql.shell.completion_context import completion_context


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    with flowsql.connect() as session:
        session.sql("CREATE TABLE orders (id BIGINT, customer VARCHAR, amount DOUBLE) "
                    "WITH ('connector' = 'datagen', 'number-of-rows' = '5')")
        session.sql("CREATE TABLE customers (cid BIGINT, name VARCHAR) "
                    "WITH ('connector' = 'datagen', 'number-of-rows' = '5')")
        session.sql("CREATE VIEW big AS SELECT id, amount * 2 AS doubled FROM orders")
        yield session


def complete(session: Session, before: str, after: str = "") -> list[tuple[str, str, str]]:
    """(inserted text, shown text, note) of every completion, in menu order."""
    completer = SqlCompleter(session)
    document = Document(before + after, len(before))
    found = list(completer.get_completions(document, CompleteEvent(completion_requested=True)))
    for completion in found:
        assert completion.start_position == -len(completion_context(before, after).word)
    return [(c.text, c.display_text, c.display_meta_text) for c in found]


def texts(session: Session, before: str, after: str = "") -> list[str]:
    return [text for text, _, _ in complete(session, before, after)]


def test_tables_and_views_after_from_and_join(session: Session) -> None:
    assert complete(session, "SELECT * FROM ") == [
        ("big", "big", "view"), ("customers", "customers", "table"),
        ("orders", "orders", "table")]
    assert texts(session, "SELECT * FROM orders o JOIN cu") == ["customers"]
    assert texts(session, "SELECT * FROM orders, c") == ["customers"]
    assert texts(session, "INSERT INTO o") == ["orders"]
    assert texts(session, "\\d b") == ["big"]


def test_columns_after_an_alias_use_the_rest_of_the_statement(session: Session) -> None:
    assert complete(session, "SELECT o.", " FROM orders o") == [
        ("id", "id", "BIGINT"), ("customer", "customer", "VARCHAR"),
        ("amount", "amount", "DOUBLE")]
    assert texts(session, "SELECT c.n", " FROM orders AS o JOIN customers AS c ON 1 = 1") == [
        "name"]
    assert texts(session, "SELECT * FROM orders WHERE orders.c") == ["customer"]
    assert complete(session, "SELECT b.", " FROM big b") == [
        ("id", "id", "BIGINT"), ("doubled", "doubled", "DOUBLE")]
    assert texts(session, "SELECT x.", " FROM orders o") == []


def test_expression_offers_columns_in_scope_then_functions_then_keywords(
        session: Session) -> None:
    assert texts(session, "SELECT cu", " FROM orders") == [
        "customer", "cume_dist", "cumulate", "current_date", "current_timestamp"]
    assert texts(session, "SELECT * FROM orders WHERE AM") == ["amount"]
    assert texts(session, "SELECT COU") == ["COUNT"]
    assert texts(session, "select cou") == ["count"]
    assert texts(session, "SELECT * FROM orders WH") == ["WHEN", "WHERE"]


def test_statement_start_keywords(session: Session) -> None:
    assert texts(session, "") == ["ANALYZE", "CREATE", "DESCRIBE", "DROP", "EXPLAIN",
                                  "INSERT", "RESET", "SELECT", "SET", "SHOW", "STOP", "WITH"]
    assert texts(session, "SELECT 1; se") == ["select", "set"]


def test_the_word_after_a_statements_first_word(session: Session) -> None:
    assert texts(session, "SHOW ") == ["TABLES", "FUNCTIONS", "USER", "JOBS"]
    assert texts(session, "show j") == ["jobs"]
    assert texts(session, "CREATE ") == ["TABLE", "VIEW", "FUNCTION", "OR", "TEMPORARY"]
    assert texts(session, "DROP V") == ["VIEW"]
    assert texts(session, "INSERT ") == ["INTO"]
    assert texts(session, "STOP ") == ["JOB"]


def test_setting_keys_and_allowed_values(session: Session) -> None:
    keys = sorted(option.key for option in SETTINGS)
    assert [shown for _, shown, _ in complete(session, "SET ")] == [*keys, "spark."]
    assert complete(session, "SET 'execution.run") == [
        ("execution.runtime-mode'", "execution.runtime-mode", "string")]
    assert complete(session, "SET execution.run") == [
        ("'execution.runtime-mode'", "execution.runtime-mode", "string")]
    assert texts(session, "SET 'execution.runtime-mode' = '") == ["batch'", "streaming'"]
    assert texts(session, "SET 'execution.runtime-mode' = s") == ["'streaming'"]
    assert texts(session, "SET 'table.exec.mini-batch.enabled' = '") == ["true'", "false'"]
    assert texts(session, "SET 'parallelism.default' = '") == []
    assert texts(session, "RESET 'execution.run") == ["execution.runtime-mode'"]


def test_option_keys_follow_the_connector_and_format_of_that_with(session: Session) -> None:
    ddl = "CREATE TABLE t (a INT) WITH ("
    assert [shown for _, shown, _ in complete(session, ddl + "'connector' = 'datagen', '")
            ] == ["number-of-rows", "rows-per-second", "seed"]
    assert texts(session, ddl + "'connector' = 'datagen', 'se") == ["seed'"]
    assert texts(session, ddl + "'connector' = 'datagen', se") == ["'seed'"]
    assert texts(session, ddl + "'connector' = 'filesystem', 'format' = 'csv', 'csv.") == [
        "csv.field-delimiter'", "csv.ignore-first-line'", "csv.null-literal'",
        "csv.ignore-parse-errors'"]
    # without a connector the table is a filesystem one, whose default format is parquet
    assert [shown for _, shown, _ in complete(session, ddl + "'")] == [
        "connector", "path", "format", "source.monitor-interval",
        "sink.rolling-policy.file-size", "format.ignore-parse-errors"]
    assert texts(session, ddl + "'connector' = '") == [
        "filesystem'", "datagen'", "print'", "blackhole'", "kafka'", "upsert-kafka'",
        "socket'", "nexmark'"]
    assert texts(session, ddl + "'connector' = 'filesystem', 'format' = '") == [
        "parquet'", "csv'", "json'"]
    kafka = ddl + "'connector' = 'kafka', 'value.format' = 'csv', 'value.csv.f"
    assert texts(session, kafka) == ["value.csv.field-delimiter'"]


def test_explain_modes_then_the_statement_explained(session: Session) -> None:
    assert texts(session, "EXPLAIN ") == ["ANALYZE", "VERBOSE", "MEMO", "PYSPARK", "PLAN",
                                          "(COSTS OFF)", "SELECT", "WITH"]
    assert texts(session, "explain an") == ["analyze"]
    assert texts(session, "EXPLAIN (") == ["COSTS"]
    assert texts(session, "EXPLAIN (COSTS ") == ["ON", "OFF"]
    # COSTS OFF applies to the plan and EXPLAIN VERBOSE only (the parser refuses others)
    assert texts(session, "EXPLAIN (COSTS OFF) ") == ["VERBOSE", "SELECT", "WITH"]
    assert texts(session, "EXPLAIN PLAN ") == ["FOR"]
    for modes in ("PLAN FOR", "ANALYZE", "VERBOSE", "MEMO", "PYSPARK", "(COSTS OFF) VERBOSE"):
        assert texts(session, f"EXPLAIN {modes} ") == ["SELECT", "WITH"], modes
    assert texts(session, "SELECT 1; EXPLAIN MEMO SEL") == ["SELECT"]
    assert texts(session, "EXPLAIN MEMO SELECT * FROM ") == ["big", "customers", "orders"]
    assert texts(session, "EXPLAIN (COSTS OFF) SELECT * FROM orders WHERE am") == ["amount"]


def test_per_column_options_of_the_table_being_created(session: Session) -> None:
    ddl = ("CREATE TABLE g (id BIGINT, `my name` STRING, price DECIMAL(10, 2), "
           "at AS PROCTIME(), PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'datagen', ")
    per_column = ["kind", "start", "end", "min", "max", "length"]
    # computed columns and constraints have no generator: only id, my name and price
    assert [shown for _, shown, _ in complete(session, ddl + "'fields.")] == [
        f"fields.{column}.{option}" for column in ("id", "my name", "price")
        for option in per_column]
    assert complete(session, ddl + "'fields.id.k") == [("fields.id.kind'", "fields.id.kind",
                                                          "string")]
    assert texts(session, ddl + "'fields.price.m") == ["fields.price.min'",
                                                       "fields.price.max'"]
    # what is written is not offered again; the allowed values follow the key
    assert texts(session, ddl + "'fields.id.kind' = 'sequence', 'fields.id.") == [
        "fields.id.start'", "fields.id.end'", "fields.id.min'", "fields.id.max'",
        "fields.id.length'"]
    assert texts(session, ddl + "'fields.id.kind' = '") == ["random'", "sequence'"]
    # a connector without per-column options offers none
    assert texts(session, "CREATE TABLE g (id BIGINT) WITH ('connector' = 'print', "
                          "'fields.") == []


def test_names_inside_a_quoted_identifier_close_it(session: Session) -> None:
    assert complete(session, "SELECT * FROM `or") == [("orders`", "orders", "table")]
    assert complete(session, 'SELECT * FROM "cu') == [('customers"', "customers", "table")]
    # columns only (no functions or keywords), of the tables named after the cursor too
    assert complete(session, "SELECT `cu", " FROM orders") == [
        ("customer`", "customer", "VARCHAR")]
    assert texts(session, "SELECT o.`am", " FROM orders o") == ["amount`"]
    assert texts(session, "SELECT `", " FROM customers") == ["cid`", "name`"]
    # where no name belongs, nothing
    assert texts(session, "SET `exec") == []
    assert texts(session, "CREATE TABLE `x") == []


@pytest.mark.parametrize("before", [
    "SELECT 'abc",                      # inside a string literal
    "SELECT \"ab",                      # inside an unclosed quoted identifier
    "SELECT 1 -- FROM ",                # inside a line comment
    "SELECT /* FROM ",                  # inside an unclosed block comment
    "SELECT * FROM orders WHERE (((",   # unbalanced brackets
    "SET 'a' ",                         # after a setting key, before '='
    "CREATE TABLE t (a INT) WITH ('k' ",
    "SELECT ``",
    ")))",
    "\\x y",
    "'",
    "SELECT CASE WHEN",
])
def test_incomplete_sql_never_raises(session: Session, before: str) -> None:
    # the outcome for these is "nothing sensible to offer" or generic words: never an error
    complete(session, before)
    complete(session, before, " FROM orders;")


@pytest.mark.parametrize(("before", "kind"), [
    ("SELECT 'abc", "none"),
    ("SELECT 1 -- FROM ", "none"),
    ("SELECT /* FROM ", "none"),
    ("EXPLAIN SELECT * FROM ", "table"),
    ("EXPLAIN VERBOSE SELECT * FROM orders WHERE ", "expression"),
    ("EXPLAIN MEMO SELECT * FROM ", "table"),
    ("EXPLAIN ", "second_word"),
    ("SELECT * FROM `ord", "table"),
    ("SELECT `a", "expression"),
    ("SELECT 1; SELECT * FROM orders; SELECT * FROM ", "table"),
    ("SELECT a, ", "expression"),
    ("SELECT a FROM t WHERE b IN (1, ", "expression"),
    ("\\", "meta_command"),
])
def test_context_kinds(before: str, kind: str) -> None:
    assert completion_context(before).kind == kind


def test_meta_commands_after_a_backslash(session: Session) -> None:
    assert complete(session, "\\") == [
        ("\\?", "\\?", "show this help (also: help, HELP;)"),
        ("\\q", "\\q", "quit (also: quit, exit, Ctrl-D)"),
        ("\\d", "\\d", "list tables and views")]


def test_a_session_function_is_offered(session: Session) -> None:
    session.sql("CREATE TEMPORARY FUNCTION my_upper AS 'tests.shell.test_completion.shout'")
    try:
        assert complete(session, "SELECT my_") == [("my_upper", "my_upper", "scalar function")]
    finally:
        session.sql("DROP FUNCTION my_upper")


@flowsql.udf(result_type="VARCHAR")
def shout(text: str) -> str:
    return text.upper()


_FRAGMENTS = ["SELECT", " ", "FROM", "orders", "o", ".", ",", "(", ")", "'", '"', "`", ";",
              "--", "/*", "*/", "\n", "WITH", "SET", "=", "'connector'", "JOIN", "cu",
              "EXPLAIN", "\\", "d", "''", "a"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=14), st.integers(min_value=0))
def test_any_text_and_cursor_gives_matching_completions_without_raising(
        session: Session, parts: list[str], cut: int) -> None:
    text = "".join(parts)
    cut = cut % (len(text) + 1)
    context = completion_context(text[:cut], text[cut:])
    for _, shown, _ in complete(session, text[:cut], text[cut:]):
        assert shown.lower().startswith(context.word.lower())
