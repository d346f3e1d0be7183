"""The progress line of a long batch query in the real shell: visible while the query
runs, gone when its result shows, and Ctrl-C cancels the query and keeps the session."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.tpch import create_table_sql
from tests.shell.terminal import PROMPT, Terminal

#: a datagen table read at 5,000 rows per second: ``rows`` rows take rows / 5000 seconds
TABLE = ("CREATE TABLE slow_{rows} (k BIGINT, v STRING) WITH ('connector' = 'datagen', "
         "'number-of-rows' = '{rows}', 'rows-per-second' = '5000');")
LINE = re.compile(r"^\[operators \d+/\d+ · rows read [\d.]+[KMG]? of ~(?P<total>[\d.]+[KMG]?) "
                  r"\(\d+%\) · \d+\.\d s\]  Ctrl-C cancels$", re.MULTILINE)
HINT = "Ctrl-C cancels"

SETTINGS = {
    "parallelism 1": (),
    # plan for the workers even where one subtask would be cheaper: the figures then
    # come from the worker processes
    "parallelism 2": ("--set", "parallelism.default=2",
                      "--set", "optimizer.small-query-on-one-subtask=false"),
}


@pytest.fixture(params=list(SETTINGS))
def terminal(request: pytest.FixtureRequest) -> Iterator[Terminal]:
    with Terminal(*SETTINGS[request.param], width=100, height=30) as shell:
        shell.wait_for(PROMPT)
        yield shell


def test_the_line_shows_while_the_query_runs_and_is_gone_with_the_result(
        terminal: Terminal) -> None:
    terminal.type(TABLE.format(rows=15000) + "\n")
    terminal.wait_for("Table 'slow_15000' created")
    terminal.type("SELECT COUNT(*) AS n, COUNT(DISTINCT v) > 0 AS any_v FROM slow_15000;\n")
    seen = terminal.wait_until(LINE.search, "the progress line")
    assert LINE.search(seen).group("total") == "15.0K"  # type: ignore[union-attr]
    history = terminal.wait_until(
        lambda written: re.search(r"1 row in \d+\.\d\d s\n\nflowsql>$", written) is not None,
        "the result and the next prompt", terminal.history)
    ran = history.split("FROM slow_15000;\n", 1)[1]
    # the result starts at the line's start: the progress line was erased, not pushed up
    assert re.fullmatch(r"    n \| any_v\n------\+------\n15000 \| true\n"
                        r"1 row in \d+\.\d\d s\n\nflowsql>", ran), ran
    assert HINT not in history


def test_ctrl_c_cancels_the_query_and_the_session_goes_on(terminal: Terminal) -> None:
    terminal.type(TABLE.format(rows=10_000_000) + "\n")
    terminal.wait_for("Table 'slow_10000000' created")
    terminal.type("SELECT v, COUNT(*) FROM slow_10000000 GROUP BY v;\n")
    terminal.wait_until(LINE.search, "the progress line")
    terminal.key("C-c")
    history = terminal.wait_until(lambda written: written.endswith("Cancelled.\n\nflowsql>"),
                                  "the query cancelled", terminal.history)
    assert history.split("GROUP BY v;\n", 1)[1] == "Cancelled.\n\nflowsql>"
    terminal.type("SHOW TABLES;\n")
    history = terminal.wait_until(
        lambda written: re.search(r"1 row in \d+\.\d\d s\n\nflowsql>$", written) is not None,
        "the tables", terminal.history)
    assert "slow_10000000" in history.rsplit("SHOW TABLES;", 1)[1]
    # a query after the cancelled one runs (at parallelism 2, on the same workers)
    terminal.type(TABLE.format(rows=300).replace("5000", "100000") + "\n")
    terminal.wait_for("Table 'slow_300' created")
    terminal.type("SELECT COUNT(*) AS n FROM slow_300;\n")
    history = terminal.wait_until(
        lambda written: re.search(r"1 row in \d+\.\d\d s\n\nflowsql>$", written) is not None,
        "the count", terminal.history)
    assert re.fullmatch(r"  n\n---\n300\n1 row in \d+\.\d\d s\n\nflowsql>",
                        history.rsplit("FROM slow_300;\n", 1)[1])


SPARK_LINE = re.compile(r"^\[stages \d+/\d+ · \d+\.\d s\]  Ctrl-C cancels$", re.MULTILINE)


@pytest.mark.slow  # Spark's start and a cold join: a minute under load
def test_spark_shows_its_stages(tpch_dir: Path, tmp_path: Path) -> None:
    """On Spark the line counts the stages of the query's Spark jobs (Spark knows no
    operators or rows read while it runs); it is gone when the result prints."""
    init = tmp_path / "init.sql"
    init.write_text("".join(create_table_sql(name, tpch_dir) + ";\n"
                            for name in ("orders", "lineitem")))
    query = ("SELECT o_orderpriority, COUNT(*) AS n FROM orders JOIN lineitem "
             "ON o_orderkey = l_orderkey GROUP BY o_orderpriority ORDER BY o_orderpriority;")
    with Terminal("-i", str(init), "--set", "engine=spark",
                  env={"FLOWSQL_SPARK_LOG": str(tmp_path / "spark.log")},
                  width=200, height=30) as terminal:
        terminal.wait_for(PROMPT)
        terminal.type(query + "\n")
        terminal.wait_until(SPARK_LINE.search, "the stages line")
        history = terminal.wait_until(
            lambda written: re.search(r"5 rows in \d+\.\d\d s\n\nflowsql>$", written)
            is not None, "the result", terminal.history)
    ran = history.split(query + "\n", 1)[1]
    assert HINT not in ran
    # the rows as DuckDB counts them over the same files
    table = ("o_orderpriority |     n\n"
             "----------------+------\n"
             "1-URGENT        | 12014\n"
             "2-HIGH          | 12265\n"
             "3-MEDIUM        | 11808\n"
             "4-NOT SPECIFIED | 12185\n"
             "5-LOW           | 11903\n")
    assert re.fullmatch(r"(Spark started in \d+\.\d s \(log: .+\)\n)?" + re.escape(table)
                        + r"5 rows in \d+\.\d\d s\n\nflowsql>", ran), ran
