"""The real shell in a pseudo-terminal: completion menus, help, -i and multi-line input,
asserted on the exact text on the screen. One shell serves the whole module; every test
starts from an empty prompt at the top of a cleared screen."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import flowsql
from flowsql.shell.help import HELP_TEXT
from tests.shell.terminal import PROMPT, Terminal

INIT = """\
CREATE TABLE orders (id BIGINT, customer VARCHAR, amount DOUBLE)
  WITH ('connector' = 'datagen', 'number-of-rows' = '3');
CREATE VIEW big AS SELECT id, amount FROM orders;
"""
#: what the init script printed, then the banner and the first prompt
START_SCREEN = ["Table 'orders' created", "", "View 'big' created",
                f"flowsql {flowsql.__version__}: type \\? for help, \\q to quit", "", PROMPT]


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Terminal, list[str]]]:
    workdir = tmp_path_factory.mktemp("terminal")
    init = workdir / "init.sql"
    init.write_text(INIT)
    shell = Terminal("-i", str(init), width=100, height=40)
    try:
        first = shell.wait_until(lambda lines: lines[-1:] == [PROMPT], "the first prompt",
                                 shell.lines)
        yield shell, first
    finally:
        shell.close()


@pytest.fixture
def shell(started: tuple[Terminal, list[str]]) -> Terminal:
    terminal, _ = started
    terminal.fresh_prompt()
    return terminal


def menu(typed: str, *items: str) -> list[str]:
    """The screen of a completion menu opened at the end of ``typed`` (nothing of the word
    typed yet): the input line, then one item per line, one column right of the cursor."""
    indent = " " * (len(f"{PROMPT} {typed}") + 1)
    return [f"{PROMPT} {typed}".rstrip(), *(f"{indent}{item}" for item in items)]


def expect(shell: Terminal, lines: list[str]) -> None:
    assert shell.wait_until(lambda screen: screen == lines, "\n".join(lines), shell.lines) == lines


def test_init_script_runs_before_the_first_prompt(
        started: tuple[Terminal, list[str]]) -> None:
    _, first = started
    assert first == START_SCREEN


def test_tables_and_views_after_from(shell: Terminal) -> None:
    shell.type("SELECT * FROM ")
    shell.key("Tab")
    expect(shell, menu("SELECT * FROM ", "big     view", "orders  table"))


def test_columns_after_an_alias_named_later_in_the_statement(shell: Terminal) -> None:
    shell.type("SELECT o. FROM orders o")
    shell.key(*["Left"] * len(" FROM orders o"))
    shell.key("Tab")
    expect(shell, [f"{PROMPT} SELECT o. FROM orders o",
                   *menu("SELECT o.", "id        BIGINT", "customer  VARCHAR",
                         "amount    DOUBLE")[1:]])
    shell.type("cu")
    shell.key("Tab")
    expect(shell, ["flowsql> SELECT o.customer FROM orders o"])


def test_setting_key_then_its_allowed_values(shell: Terminal) -> None:
    shell.type("SET 'execution.runt")
    shell.key("Tab")  # one key fits: it is inserted with its closing quote
    expect(shell, ["flowsql> SET 'execution.runtime-mode'"])
    shell.type(" = '")
    shell.key("Tab")
    expect(shell, menu("SET 'execution.runtime-mode' = '", "batch", "streaming"))


def test_option_keys_of_the_connector_in_that_with(shell: Terminal) -> None:
    typed = "CREATE TABLE g (x INT) WITH ('connector' = 'datagen', '"
    shell.type(typed)
    shell.key("Tab")
    expect(shell, menu(typed, "number-of-rows   integer", "rows-per-second  integer",
                       "seed             integer"))


@pytest.mark.parametrize("spelling", ["help", "HELP;", "\\?"])
def test_help_in_each_spelling_prints_at_once(shell: Terminal, spelling: str) -> None:
    shell.type(spelling)
    shell.key("Enter")
    expect(shell, [f"{PROMPT} {spelling}", *HELP_TEXT.splitlines(), "", PROMPT])


def test_a_statement_typed_over_three_lines(shell: Terminal) -> None:
    for line in ("SELECT x,", "  x * 2 AS y", "FROM (VALUES (1), (2)) AS v(x);"):
        shell.type(line)
        shell.key("Enter")
    # the result's timing line, not only a prompt at the bottom: a slow machine may show
    # the prompt before the statement's output has been drawn
    screen = shell.wait_until(lambda lines: lines[-1:] == [PROMPT] and len(lines) > 3
                              and lines[-3].startswith("2 rows in "), "the result",
                              shell.lines)
    timing = screen[-3]
    assert timing.startswith("2 rows in ") and timing.endswith(" s")
    assert screen[:-3] == ["flowsql> SELECT x,",
                           "      ->   x * 2 AS y",
                           "      -> FROM (VALUES (1), (2)) AS v(x);",
                           "x | y",
                           "--+--",
                           "1 | 2",
                           "2 | 4"]
    assert screen[-2:] == ["", PROMPT]


def test_keywords_strings_and_comments_are_coloured_and_brackets_matched(
        shell: Terminal) -> None:
    typed = "SELECT (1 + 2) AS x, 'a' -- note"
    shell.type(typed)
    expect(shell, [f"{PROMPT} {typed}"])
    start = len(PROMPT) + 1

    def attributes(text: str) -> set[frozenset[str]]:
        """The attribute sets of the characters of ``text`` on the input line."""
        at = start + typed.index(text)
        return {attributes for _, attributes in shell.styled_line(0)[at:at + len(text)]}

    assert "".join(char for char, _ in shell.styled_line(0)).rstrip() == f"{PROMPT} {typed}"
    assert attributes("SELECT") == attributes("AS") == {frozenset({"bold", "colour"})}
    assert attributes("'a'") == {frozenset({"colour"})}
    assert attributes("-- note") == {frozenset({"italic", "colour"})}
    assert attributes(" x, ") == {frozenset()}
    # the cursor is at the end, on no bracket: neither bracket is marked
    assert not any("reverse" in a for a in attributes("(") | attributes(")"))
    shell.key(*["Left"] * len(" AS x, 'a' -- note"))  # just after ')'
    shell.wait_until(lambda _: any("reverse" in a for a in attributes(")")),
                     "the bracket marked", shell.lines)
    assert all("reverse" in a for a in attributes("(") | attributes(")"))
    assert not any("reverse" in a for a in attributes("1 + 2"))
