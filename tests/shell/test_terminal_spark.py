"""Spark's start in the real shell: a progress line while the JVM starts, then the result
alone; Spark's own start-up lines go to the Spark log, never to the screen."""

from __future__ import annotations

import re
from pathlib import Path

from tests.shell.terminal import Terminal


def test_spark_start_shows_progress_and_keeps_its_log_out(tmp_path: Path) -> None:
    log = tmp_path / "spark.log"
    terminal = Terminal("--set", "engine=spark", env={"FLOWSQL_SPARK_LOG": str(log)},
                        width=150, height=30)
    try:
        terminal.wait_for("flowsql>")
        terminal.type("SELECT 1 AS x;\n")
        terminal.wait_until(lambda s: "Starting Spark... " in s or "Spark started in" in s,
                            "the progress line")
        history = terminal.wait_until(lambda s: "1 row in" in s and s.endswith("\nflowsql>"),
                                      "the result and the next prompt", terminal.history)
        ran = history.split("flowsql> SELECT 1 AS x;\n")[1]
        assert re.fullmatch(
            rf"Spark started in \d+\.\d s \(log: {re.escape(str(log))}\)\n"
            r"x\n-\n1\n1 row in \d+\.\d\d s\n\nflowsql>", ran), ran
        assert "Setting default log level" in log.read_text()
    finally:
        terminal.close()
