"""DISTINCT aggregates inside window aggregates, as in Flink: ``COUNT(DISTINCT ..)`` over a
window TVF stays a window aggregate (insert-only, one row per window, late rows dropped)
instead of becoming an updating GROUP BY. Hand-checked rows, at parallelism 1 and 2.

Rowtimes are seconds after 2024-01-01; ``WATERMARK FOR ts AS ts - INTERVAL '2' SECOND``
with a watermark after every record; the inputs ``LATE`` and ``SPLIT`` are described in
``tests.harness.window_sql_events``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import flowsql
from tests.harness.window_sql_events import (
    EPOCH,
    LATE,
    SPLIT,
    event_session,
    write_csv_files,
)

WINDOWS = {
    "tumble": "TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)",
    "hop": "HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
    "cumulate": "CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
}


def _query(window: str) -> str:
    return (f"SELECT window_start, window_end, COUNT(DISTINCT k) AS keys, COUNT(*) AS c, "
            f"SUM(DISTINCT v) AS s FROM TABLE({WINDOWS[window]}) "
            f"GROUP BY window_start, window_end")


def _rows(session: flowsql.Session, sql: str) -> list[tuple[object, ...]]:
    table = session.sql(sql).to_arrow()
    seconds = lambda t: int((t - EPOCH).total_seconds())  # noqa: E731
    return sorted((seconds(r["window_start"]), seconds(r["window_end"]), r["keys"], r["c"],
                   r["s"]) for r in table.to_pylist())


@pytest.mark.parametrize(("window", "expected"), [
    ("cumulate", [(0, 5, 2, 3, 3),      # a, b, a: values {1, 2}
                  (0, 10, 4, 5, 11),    # + c@8, d@4: keys a b c d, values {1, 2, 3, 5}
                  (10, 15, 1, 2, 4), (10, 20, 1, 2, 4),
                  (20, 30, 1, 1, 7)]),      # f@25 is not in [20, 25)
    ("tumble", [(0, 10, 4, 5, 11), (10, 20, 1, 2, 4), (20, 30, 1, 1, 7)]),
    ("hop", [(-5, 5, 2, 3, 3), (0, 10, 4, 5, 11),
             (5, 15, 3, 4, 13),         # c@8 a@12 e@9 a@13: keys c a e, values {3, 4, 6}
             (10, 20, 1, 2, 4), (20, 30, 1, 1, 7), (25, 35, 1, 1, 7)]),
])
def test_distinct_window_aggregate_drops_late_rows(tmp_path: Path, window: str,
                                                   expected: list[tuple[int, ...]]) -> None:
    with event_session(write_csv_files(tmp_path / "t", [LATE]), "streaming", 1) as session:
        plan = session.sql(_query(window)).explain()
        assert "WindowAggregate" in plan and "GroupAggregate" not in plan, plan
        assert _rows(session, _query(window)) == expected


def test_distinct_window_aggregate_emits_insert_only_rows(tmp_path: Path) -> None:
    with event_session(write_csv_files(tmp_path / "t", [LATE]), "streaming", 1) as session:
        stream = session.sql(_query("tumble")).stream()
        kinds = {kind for batch in stream for kind in batch.column(0).to_pylist()}
    assert kinds == {"+I"}


def test_batch_mode_keeps_every_row(tmp_path: Path) -> None:
    with event_session(write_csv_files(tmp_path / "t", [LATE]), "batch", 1) as session:
        assert _rows(session, _query("tumble")) == [
            (0, 10, 5, 6, 17),   # e@9 too: keys a b c d e, values {1, 2, 3, 5, 6}
            (10, 20, 1, 2, 4), (20, 30, 1, 1, 7)]


# SPLIT: a, value 2, is in both subtasks' shares of the windows ending at 5 and 10 and
# must count once.
@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize(("window", "expected"), [
    ("cumulate", [(0, 5, 2, 4, 3), (0, 10, 3, 5, 6), (10, 15, 1, 2, 4), (10, 20, 1, 2, 4),
                  (20, 30, 1, 1, 7)]),
    ("tumble", [(0, 10, 3, 5, 6), (10, 20, 1, 2, 4), (20, 30, 1, 1, 7)]),
])
def test_distinct_values_count_once_across_subtasks(tmp_path: Path, parallelism: int,
                                                    window: str,
                                                    expected: list[tuple[int, ...]]) -> None:
    directory = write_csv_files(tmp_path / "t", SPLIT)
    with event_session(directory, "streaming", parallelism) as session:
        assert _rows(session, _query(window)) == expected
