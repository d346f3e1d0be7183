"""A statement set typed into the real shell: Enter inside the set continues the input, the
set runs as one job, DESCRIBE JOB shows one shared read of the source feeding both INSERTs
(no scan of its own in either), and both sinks hold exactly their rows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.shell.terminal import Terminal


@pytest.fixture()
def terminal() -> Iterator[Terminal]:
    shell = Terminal("--set", "execution.runtime-mode=streaming", width=200, height=60)
    yield shell
    shell.close()


def test_statement_set_writes_two_sinks_from_one_read(terminal: Terminal,
                                                      tmp_path: Path) -> None:
    (tmp_path / "src.csv").write_text("".join(f"{i},{i * 10}\n" for i in range(1, 7)))
    terminal.wait_for("flowsql>")
    for table, path in (("src", "src.csv"), ("big", "big"), ("evens", "evens")):
        if table != "src":
            (tmp_path / path).mkdir()
        terminal.type(f"CREATE TABLE {table} (id BIGINT, v BIGINT) WITH ("
                      f"'connector' = 'filesystem', 'path' = '{tmp_path / path}', "
                      f"'format' = 'csv');\n")
        terminal.wait_for(f"Table '{table}' created")
    terminal.type("BEGIN STATEMENT SET;\n")
    terminal.type("INSERT INTO big SELECT id, v FROM src WHERE v > 30;\n")
    terminal.wait_for("      -> INSERT INTO big SELECT id, v FROM src WHERE v > 30;\n      ->")
    terminal.type("INSERT INTO evens SELECT id, v FROM src WHERE id % 2 = 0;\nEND;\n")
    terminal.wait_for("      -> END;\nJob 1 submitted: STATEMENT SET (INSERT INTO big, evens)")

    def described() -> str:
        terminal.type("DESCRIBE JOB '1';\n")
        return terminal.wait_for("SharedScanExec (table src) [operator 11]")

    screen = terminal.wait_until(lambda s: "| FINISHED |" in s.split("DESCRIBE JOB")[-1],
                                 "the job finished", described)
    operators = screen.split("DESCRIBE JOB")[-1].split(" s\n", 1)[1].split("\n\n")[0]
    assert [re.sub(r" \[operator \d+\]", "", line)
            for line in operators.strip().splitlines()] == [
        "StatementSetExec: 0 in, 0 out, input ended",
        "SinkExec (table big): 3 in, 0 out, input ended",
        "ProjectExec: 3 in, 3 out, input ended",
        "ProjectExec: 3 in, 3 out, input ended",
        "FilterExec: 6 in, 3 out, input ended",
        "SharedScanExec (table src): 0 in, 6 out",
        "SinkExec (table evens): 3 in, 0 out, input ended",
        "ProjectExec: 3 in, 3 out, input ended",
        "ProjectExec: 3 in, 3 out, input ended",
        "FilterExec: 6 in, 3 out, input ended",
        "SharedScanExec (table src): 0 in, 6 out",
    ]
    terminal.type("SET 'execution.runtime-mode' = 'batch';\n")
    terminal.wait_for("execution.runtime-mode = batch")  # answered before the next input
    for table, rows in (("big", ["4 | 40", "5 | 50", "6 | 60"]),
                        ("evens", ["2 | 20", "4 | 40", "6 | 60"])):
        terminal.type(f"SELECT id, v FROM {table} ORDER BY id;\n")
        query = f"FROM {table} ORDER BY id;\n"
        screen = terminal.wait_until(
            lambda s, q=query: q in s and "3 rows" in s.split(q)[-1],  # type: ignore[misc]
            f"the rows of {table}", terminal.history)
        result = screen.split(query)[-1].split("\n3 rows")[0]
        assert result.splitlines() == ["id |  v", "---+---", *[f" {row}" for row in rows]]
