"""Result modes in the real shell: the table view of a streaming GROUP BY updates in place
and ``q`` leaves it (cancelling the query); the changelog mode prints each change in Flink's
row shape, exactly the changes the Python API streams."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

import flowsql
from flowsql.render import render_change_rows
from tests.shell.terminal import Terminal

STATUS = re.compile(r"^ (\d+) rows \| (\d+) changes \| refresh 0\.5 s \| running \| q: quit$")

ENDLESS = ("CREATE TABLE g (k INT) WITH ('connector' = 'datagen', 'rows-per-second' = '20', "
           "'fields.k.min' = '1', 'fields.k.max' = '3');")


@pytest.fixture()
def terminal() -> Iterator[Terminal]:
    shell = Terminal("--set", "execution.runtime-mode=streaming", width=100, height=20)
    yield shell
    shell.close()


def _view(screen: str) -> tuple[list[str], tuple[int, int] | None]:
    """The view's lines above the status line, and the status's (rows, changes)."""
    lines = screen.split("\n")
    status = STATUS.match(lines[-1])
    return lines[:-1], None if status is None else (int(status[1]), int(status[2]))


def test_table_view_updates_in_place_and_q_leaves_it(terminal: Terminal) -> None:
    terminal.wait_for("flowsql>")
    terminal.type("SET 'sql-client.execution.result-mode' = 'table';\n")
    terminal.wait_for("sql-client.execution.result-mode = table")
    terminal.type(ENDLESS + "\n")
    terminal.wait_for("Table 'g' created")
    terminal.type("SELECT k, COUNT(*) AS n FROM g GROUP BY k;\n")

    def full_view(screen: str) -> bool:
        body, status = _view(screen)
        return status is not None and status[0] == 3 and body[0].startswith("k |")

    seen: list[tuple[list[str], int]] = []
    while len(seen) < 2:
        body, status = _view(terminal.wait_until(
            lambda s: full_view(s) and (not seen or _view(s)[1][1] > seen[-1][1]),  # type: ignore[index]
            "the view with all three keys, updated since the last look"))
        assert status is not None
        seen.append((body, status[1]))
    counts, orders = [], []
    for body, _ in seen:
        # the same place on the screen: header, rule, then one row per key, then blank
        assert re.fullmatch(r"k \| +n", body[0]), body[0]
        assert re.fullmatch(r"-+\+-+", body[1]), body[1]
        rows = [line.split(" | ") for line in body[2:5]]
        assert sorted(int(k) for k, _ in rows) == [1, 2, 3]
        assert all(line == "" for line in body[5:])
        counts.append(sum(int(n) for _, n in rows))
        orders.append([k for k, _ in rows])
    assert counts[1] > counts[0], "the counts grew"
    assert orders[1] == orders[0], "each key kept its line"
    terminal.key("q")
    history = terminal.wait_for("changes; query cancelled)")
    summary = history.split("GROUP BY k;\n")[-1].split("\n")[0]
    assert re.fullmatch(r"\(3 rows, \d+ changes; query cancelled\)", summary), summary
    terminal.wait_until(lambda s: s.endswith("query cancelled)\nflowsql>"),
                        "the prompt after the view")


def test_ctrl_c_leaves_the_table_view_too(terminal: Terminal) -> None:
    terminal.wait_for("flowsql>")
    terminal.type("SET 'execution.result-mode' = 'table';\n" + ENDLESS + "\n")
    terminal.wait_for("Table 'g' created")
    terminal.type("SELECT k, COUNT(*) AS n FROM g GROUP BY k;\n")
    terminal.wait_until(lambda s: _view(s)[1] is not None, "the table view")
    terminal.key("C-c")
    terminal.wait_for("changes; query cancelled)\nflowsql>")


def test_changelog_mode_prints_every_change(terminal: Terminal) -> None:
    """Batches of two rows make the counts update: -U/+U pairs follow the inserts."""
    source = ("CREATE TABLE s (id BIGINT) WITH ('connector' = 'datagen', "
              "'fields.id.kind' = 'sequence', 'fields.id.start' = '1', "
              "'fields.id.end' = '7', 'rows-per-second' = '0')")
    query = "SELECT id % 2 AS k, COUNT(*) AS n FROM s GROUP BY id % 2"
    with flowsql.connect(**{"execution.runtime-mode": "streaming",
                            "execution.batch-size": "2"}) as session:
        session.sql(source)
        expected = "\n".join(render_change_rows(batch)
                             for batch in session.sql(query).stream())
    assert "-U[" in expected and "+U[" in expected, expected
    terminal.wait_for("flowsql>")
    terminal.type("SET 'execution.batch-size' = '2';\n")
    terminal.type("SET 'sql-client.execution.result-mode' = 'changelog';\n")
    terminal.type(source + ";\n")
    terminal.wait_for("Table 's' created")
    terminal.type(query + ";\n")
    changes = expected.count("\n") + 1
    history = terminal.wait_for(f"({changes} changes)")
    printed = history.split(query + ";\n")[-1].split(f"\n({changes} changes)")[0]
    assert printed == expected
