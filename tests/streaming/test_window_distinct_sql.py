"""DISTINCT aggregates inside window aggregates, as in Flink: ``COUNT(DISTINCT ..)`` over a
window TVF stays a window aggregate (insert-only, one row per window, late rows dropped)
instead of becoming an updating GROUP BY. Hand-checked rows, at parallelism 1 and 2.

Rowtimes are seconds after 2024-01-01; ``WATERMARK FOR ts AS ts - INTERVAL '2' SECOND``
with a watermark after every record. The late-row input, in file order (k, ts, v) with
the watermark each row sees on arrival:

    a@1 v1 (-inf)  b@2 v1 (-1)  a@3 v2 (0)  c@8 v3 (1)
    d@4 v5 (6)     [0, 5) fired at 6: d joins only its later windows
    a@12 v4 (6)
    e@9 v6 (10)    every TUMBLE / CUMULATE window of e fired at 10: late; HOP [5, 15) open
    a@13 v4 (10)   f@25 v7 (11)
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import flowsql

EPOCH = dt.datetime(2024, 1, 1)
LATE = [("a", 1, 1), ("b", 2, 1), ("a", 3, 2), ("c", 8, 3), ("d", 4, 5), ("a", 12, 4),
        ("e", 9, 6), ("a", 13, 4), ("f", 25, 7)]
WINDOWS = {
    "tumble": "TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)",
    "hop": "HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
    "cumulate": "CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
}


def _write(directory: Path, files: list[list[tuple[str, int, int]]]) -> Path:
    """One CSV file per list of (k, ts seconds, v): at parallelism 2 the source subtask
    ``i`` reads file ``i``."""
    directory.mkdir()
    for i, rows in enumerate(files):
        (directory / f"{i}.csv").write_text("".join(
            f"{k},{EPOCH + dt.timedelta(seconds=s)},{v}\n" for k, s, v in rows))
    return directory


def _session(directory: Path, mode: str, parallelism: int) -> flowsql.Session:
    session = flowsql.connect(**{"execution.runtime-mode": mode,
                                 "pipeline.auto-watermark-interval": "0",
                                 "execution.batch-size": "1",
                                 "parallelism.default": str(parallelism)})
    session.sql(f"""CREATE TABLE t (k STRING, ts TIMESTAMP(3), v BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
                    WITH ('connector' = 'filesystem', 'path' = '{directory}',
                          'format' = 'csv')""")
    return session


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
    with _session(_write(tmp_path / "t", [LATE]), "streaming", 1) as session:
        plan = session.sql(_query(window)).explain()
        assert "WindowAggregate" in plan and "GroupAggregate" not in plan, plan
        assert _rows(session, _query(window)) == expected


def test_distinct_window_aggregate_emits_insert_only_rows(tmp_path: Path) -> None:
    with _session(_write(tmp_path / "t", [LATE]), "streaming", 1) as session:
        stream = session.sql(_query("tumble")).stream()
        kinds = {kind for batch in stream for kind in batch.column(0).to_pylist()}
    assert kinds == {"+I"}


def test_batch_mode_keeps_every_row(tmp_path: Path) -> None:
    with _session(_write(tmp_path / "t", [LATE]), "batch", 1) as session:
        assert _rows(session, _query("tumble")) == [
            (0, 10, 5, 6, 17),   # e@9 too: keys a b c d e, values {1, 2, 3, 5, 6}
            (10, 20, 1, 2, 4), (20, 30, 1, 1, 7)]


# In order within each file and file 0 before file 1 in time, so no row is late at
# either parallelism whatever the interleaving; a, value 2, is in both subtasks' shares of
# the windows ending at 5 and 10 and must count once.
SPLIT = [[("a", 1, 1), ("b", 2, 1), ("a", 3, 2)],
         [("a", 4, 2), ("c", 8, 3), ("a", 12, 4), ("a", 13, 4), ("f", 25, 7)]]


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize(("window", "expected"), [
    ("cumulate", [(0, 5, 2, 4, 3), (0, 10, 3, 5, 6), (10, 15, 1, 2, 4), (10, 20, 1, 2, 4),
                  (20, 30, 1, 1, 7)]),
    ("tumble", [(0, 10, 3, 5, 6), (10, 20, 1, 2, 4), (20, 30, 1, 1, 7)]),
])
def test_distinct_values_count_once_across_subtasks(tmp_path: Path, parallelism: int,
                                                    window: str,
                                                    expected: list[tuple[int, ...]]) -> None:
    with _session(_write(tmp_path / "t", SPLIT), "streaming", parallelism) as session:
        assert _rows(session, _query(window)) == expected
