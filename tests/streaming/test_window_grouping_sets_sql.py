"""Window aggregates with ROLLUP / CUBE / GROUPING SETS, as Flink allows them: every
grouping set is a window aggregate over the same windows (insert-only, late rows dropped
alike), with NULL for the keys its set leaves out. Hand-checked rows at parallelism 1
and 2; the input files and the watermark each row sees are those of
``tests.harness.window_sql_events`` (WATERMARK ts - 2 s, a watermark after every record).
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

TUMBLE = "TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)"
CUMULATE = "CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)"
ROLLUP = (f"SELECT window_start, window_end, k, GROUPING(k) AS g, COUNT(*) AS c, "
          f"SUM(v) AS s FROM TABLE({TUMBLE}) GROUP BY window_start, window_end, ROLLUP(k)")


def _rows(session: flowsql.Session, sql: str) -> list[tuple[object, ...]]:
    seconds = lambda t: int((t - EPOCH).total_seconds())  # noqa: E731
    return sorted(((seconds(r["window_start"]), seconds(r["window_end"]),
                    *list(r.values())[2:]) for r in session.sql(sql).to_arrow().to_pylist()),
                  key=repr)


def test_rollup_is_a_window_aggregate_per_grouping_set(tmp_path: Path) -> None:
    with event_session(write_csv_files(tmp_path / "t", [LATE]), "streaming", 1) as session:
        plan = session.sql(ROLLUP).explain().split("== Physical Plan ==")[1]
        assert plan.count("WindowAggregate tumble") == 2 and "GroupAggregate" not in plan
        # e@9 arrives at watermark 10 after [0, 10) fired: late for both grouping sets
        assert _rows(session, ROLLUP) == sorted([
            (0, 10, "a", 0, 2, 3), (0, 10, "b", 0, 1, 1), (0, 10, "c", 0, 1, 3),
            (0, 10, "d", 0, 1, 5), (0, 10, None, 1, 5, 12),
            (10, 20, "a", 0, 2, 8), (10, 20, None, 1, 2, 8),
            (20, 30, "f", 0, 1, 7), (20, 30, None, 1, 1, 7)], key=repr)


@pytest.mark.parametrize("group_by", ["GROUPING SETS ((k), ())", "CUBE(k)"])
def test_grouping_sets_of_cumulate_windows_with_a_distinct_count(tmp_path: Path,
                                                                 group_by: str) -> None:
    sql = (f"SELECT window_start, window_end, k, COUNT(*) AS c, COUNT(DISTINCT v) AS dv "
           f"FROM TABLE({CUMULATE}) GROUP BY window_start, window_end, {group_by}")
    with event_session(write_csv_files(tmp_path / "t", [LATE]), "streaming", 1) as session:
        # [0, 5) fires at watermark 6 (after c@8): d@4 joins only [0, 10); e@9 is late
        assert _rows(session, sql) == sorted([
            (0, 5, "a", 2, 2), (0, 5, "b", 1, 1), (0, 5, None, 3, 2),
            (0, 10, "a", 2, 2), (0, 10, "b", 1, 1), (0, 10, "c", 1, 1), (0, 10, "d", 1, 1),
            (0, 10, None, 5, 4),                 # values {1, 2, 3, 5}
            (10, 15, "a", 2, 1), (10, 15, None, 2, 1),
            (10, 20, "a", 2, 1), (10, 20, None, 2, 1),
            (20, 30, "f", 1, 1), (20, 30, None, 1, 1)], key=repr)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_rollup_at_parallelism_one_and_two(tmp_path: Path, parallelism: int) -> None:
    directory = write_csv_files(tmp_path / "t", SPLIT)
    with event_session(directory, "streaming", parallelism) as session:
        assert _rows(session, ROLLUP) == sorted([
            (0, 10, "a", 0, 3, 5), (0, 10, "b", 0, 1, 1), (0, 10, "c", 0, 1, 3),
            (0, 10, None, 1, 5, 9),
            (10, 20, "a", 0, 2, 8), (10, 20, None, 1, 2, 8),
            (20, 30, "f", 0, 1, 7), (20, 30, None, 1, 1, 7)], key=repr)


def test_batch_mode_keeps_the_late_row(tmp_path: Path) -> None:
    with event_session(write_csv_files(tmp_path / "t", [LATE]), "batch", 1) as session:
        rows = _rows(session, ROLLUP)
    assert (0, 10, "e", 0, 1, 6) in rows and (0, 10, None, 1, 6, 18) in rows
