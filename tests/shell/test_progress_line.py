"""The progress line of a long batch query: its text for given figures, how it is drawn
and erased, and the figures a running query reports at parallelism 1 and 2."""

from __future__ import annotations

import io
import threading
import time

import pytest

import flowsql
from flowsql.planner.query_progress import QueryProgress
from flowsql.shell.progress_line import ERASE, ProgressLine, progress_text, short_count

#: 12,000 rows at 6,000 per second: a query over it reads for about two seconds
SLOW_TABLE = ("CREATE TABLE slow (k BIGINT, v STRING) WITH ('connector' = 'datagen', "
              "'number-of-rows' = '12000', 'rows-per-second' = '6000')")


@pytest.mark.parametrize(("rows", "text"), [
    (0, "0"), (999, "999"), (1000, "1.0K"), (12_345, "12.3K"), (1_200_000, "1.2M"),
    (6e6, "6.0M"), (3_050_000_000, "3.0G")])
def test_short_count(rows: float, text: str) -> None:
    assert short_count(rows) == text


def test_operators_rows_of_the_estimate_and_seconds() -> None:
    progress = QueryProgress(operators_done=3, operators=7, rows_read=1_200_000,
                             rows_estimated=6_000_000.0)
    assert progress_text(progress, 2.44) == (
        "[operators 3/7 · rows read 1.2M of ~6.0M (20%) · 2.4 s]  Ctrl-C cancels")


def test_past_a_low_estimate_only_the_counts_are_shown() -> None:
    progress = QueryProgress(operators_done=1, operators=4, rows_read=7_000,
                             rows_estimated=5_000.0)
    assert progress_text(progress, 10.0) == (
        "[operators 1/4 · rows read 7.0K of ~5.0K · 10.0 s]  Ctrl-C cancels")


def test_without_an_estimate_the_rows_read_alone() -> None:
    progress = QueryProgress(operators_done=0, operators=2, rows_read=42,
                             rows_estimated=None)
    assert progress_text(progress, 0.5) == (
        "[operators 0/2 · rows read 42 · 0.5 s]  Ctrl-C cancels")


def test_spark_stages() -> None:
    assert progress_text(QueryProgress(stages_done=1, stages=3), 7.25) == (
        "[stages 1/3 · 7.2 s]  Ctrl-C cancels")
    # no job planned yet: the seconds alone
    assert progress_text(QueryProgress(stages_done=0, stages=0), 0.6) == (
        "[0.6 s]  Ctrl-C cancels")


def test_the_line_is_redrawn_in_place_and_erased_on_leaving() -> None:
    out = io.StringIO()
    figures = QueryProgress(operators_done=1, operators=2, rows_read=10, rows_estimated=20)
    with ProgressLine(lambda: figures, out, delay=0.0):
        deadline = time.monotonic() + 30
        while out.getvalue().count(ERASE) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    written = out.getvalue()
    draws = written.split(ERASE)
    assert draws[0] == "" and draws[-1] == ""  # each draw starts by erasing; the last erases
    assert len(draws) >= 3
    for draw in draws[1:-1]:
        assert draw.startswith("[operators 1/2 · rows read 10 of ~20 (50%) · ")
        assert draw.endswith(" s]  Ctrl-C cancels")


def test_nothing_is_drawn_before_the_delay_nor_without_figures() -> None:
    out = io.StringIO()
    with ProgressLine(lambda: QueryProgress(operators=1), out, delay=60.0):
        time.sleep(0.2)
    asked = threading.Event()

    def nothing_runs() -> QueryProgress | None:
        asked.set()
        return None

    with ProgressLine(nothing_runs, out, delay=0.0):
        assert asked.wait(30)
    assert out.getvalue() == ""


@pytest.mark.parametrize("parallelism", [1, 2])
def test_a_running_query_reports_rows_read_and_operators_done(parallelism: int) -> None:
    """While the query reads, rows read grow towards the scan's estimate (the datagen
    table's row count); once it ran, every operator is done and every row was read."""
    session = flowsql.connect(parallelism=parallelism)
    # at 2, plan for the workers even though one subtask would be cheaper: the figures
    # then come from the worker processes' reports
    session.set("optimizer.small-query-on-one-subtask", "false")
    session.track_progress = True
    try:
        session.sql(SLOW_TABLE)
        seen: list[QueryProgress] = []
        trackers: list[object] = []
        finished = threading.Event()

        def watch() -> None:
            while not finished.wait(0.05):
                progress, running = session.progress(), session.running_query
                if progress is not None:
                    seen.append(progress)
                if running is not None and not trackers:
                    trackers.append(running)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            result = session.sql("SELECT v, COUNT(*) AS n FROM slow GROUP BY v")
        finally:
            finished.set()
            watcher.join()
        assert result.table is not None and sum(result.table["n"].to_pylist()) == 12_000
        assert session.progress() is None  # nothing runs now
        assert seen and trackers
        assert {p.rows_estimated for p in seen} == {12_000.0}
        reads = [p.rows_read for p in seen]
        assert reads == sorted(reads)  # rows read never go back
        assert any(0 < r < 12_000 for r in reads)  # seen part way
        final = trackers[0].snapshot()  # type: ignore[attr-defined]
        assert final.rows_read == 12_000
        assert final.operators_done == final.operators
        # scan, aggregate, project; at 2: scan, partial aggregate, hash exchange, final
        # aggregate, project (the gather to the session is no operator of a worker)
        assert final.operators == (3 if parallelism == 1 else 5)
    finally:
        session.close()


def test_without_tracking_a_session_reports_nothing() -> None:
    session = flowsql.connect()
    session.sql(SLOW_TABLE.replace("'rows-per-second' = '6000'", "'rows-per-second' = '1000000'"))
    assert session.sql("SELECT COUNT(*) FROM slow").table is not None
    assert session.running_query is None and session.progress() is None
