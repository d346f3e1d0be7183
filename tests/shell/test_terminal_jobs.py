"""Background jobs in the real shell: a print sink's lines appear above the prompt while the
line being typed stays intact; Ctrl-C at the prompt (with or without input) leaves the job
running; quitting asks first and keeps the shell when the answer is no."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.shell.terminal import Terminal

PRINTED = re.compile(r"^\+I\[(\d+)\]$")


@pytest.fixture()
def terminal() -> Iterator[Terminal]:
    shell = Terminal("--set", "execution.runtime-mode=streaming", width=150, height=16)
    yield shell
    shell.close()


def start_printing_job(terminal: Terminal) -> None:
    terminal.wait_for("flowsql>")
    terminal.type("CREATE TABLE g (id BIGINT) WITH ('connector' = 'datagen', "
                  "'rows-per-second' = '5', 'fields.id.kind' = 'sequence', "
                  "'fields.id.start' = '1', 'fields.id.end' = '1000000');\n")
    terminal.type("CREATE TABLE p (id BIGINT) WITH ('connector' = 'print');\n")
    terminal.type("INSERT INTO p SELECT id FROM g;\n")
    terminal.wait_for("Job 1 submitted: INSERT INTO p")


def last_printed(screen: str) -> int:
    numbers = [int(m[1]) for line in screen.split("\n") if (m := PRINTED.match(line))]
    return numbers[-1] if numbers else 0


def test_print_output_goes_above_the_line_being_typed(terminal: Terminal) -> None:
    start_printing_job(terminal)
    terminal.type("SELECT 'half typed")
    looks = []
    while len(looks) < 3:
        screen = terminal.wait_until(
            lambda s: s.endswith("\nflowsql> SELECT 'half typed")
            and last_printed(s) > (looks[-1] if looks else 0),
            "new print output above the intact input line")
        lines = screen.split("\n")
        printed = [line for line in lines[:-1] if PRINTED.match(line)]
        # the lines just above the prompt are the sink's, whole and in order
        assert lines[-1 - len(printed[-5:]):-1] == printed[-5:]
        numbers = [int(PRINTED.match(line)[1]) for line in printed]  # type: ignore[index]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
        looks.append(last_printed(screen))
    terminal.type("';\n")
    history = terminal.wait_for("+I | half typed\n(1 changes)")
    ran = history.split("flowsql> SELECT 'half typed';\n")[-1].split("\n(1 changes)")[0]
    # the statement ran as typed; the sink's lines may still come between its output lines
    assert [line for line in ran.split("\n") if not PRINTED.match(line)] == [
        "op | 'half typed'", "+I | half typed"]


def test_ctrl_c_at_the_prompt_keeps_the_job_and_quit_asks(terminal: Terminal) -> None:
    start_printing_job(terminal)
    terminal.type("SELECT 'discarded")
    terminal.key("C-c")
    terminal.wait_until(lambda s: s.endswith("\nflowsql>"), "an empty prompt")
    terminal.key("C-c")
    before = last_printed(terminal.history())
    terminal.wait_until(lambda s: last_printed(s) > before + 2, "the job printing on",
                        terminal.history)
    terminal.type("SHOW JOBS;\n")
    history = terminal.wait_for("1 row in")
    assert re.search(r"\n1 +\| INSERT INTO p \| RUNNING \|", history.split("SHOW JOBS;")[-1])
    terminal.type("\\q\n")
    terminal.wait_for("Job 1 is running; quitting cancels it. Quit? [y/N]")
    terminal.type("n\n")
    terminal.wait_until(lambda s: s.endswith("\nflowsql>"), "the prompt again")
    assert not terminal.exited()
    terminal.type("\\q\n")
    terminal.wait_until(lambda s: s.count("Quit? [y/N]") == 2, "the second question",
                        terminal.history)
    terminal.type("y\n")
    terminal.wait_until(lambda s: terminal.exited(), "the shell to exit")
