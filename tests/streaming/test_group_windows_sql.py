"""Flink's group windows (``GROUP BY k, TUMBLE(ts, size)``, ``HOP``, ``SESSION`` and their
``_START`` / ``_END`` / ``_ROWTIME`` functions) in streaming mode, at parallelism 1 and 2:
the rows of the window TVF form of the same query, and the rows of batch mode (the input
is in event-time order, so no row is late), plus a hand-checked late row.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import flowsql
from tests.sql.test_group_windows import (
    ROWS,
    SPELLINGS,
    random_rows,
    rows,
    windowed,
    write_events,
)


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_events(tmp_path_factory.mktemp("gws") / "large.parquet", random_rows(600, 7))


def session_over(path: Path, mode: str, parallelism: int) -> flowsql.Session:
    s = flowsql.connect(**{"execution.runtime-mode": mode,
                           "pipeline.auto-watermark-interval": "0",
                           "execution.batch-size": "64",
                           "parallelism.default": str(parallelism)})
    s.sql(f"""CREATE TABLE events (k STRING, v INT, ts TIMESTAMP(3),
                 WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
              WITH ('connector' = 'filesystem', 'path' = '{path}')""")
    s.sql("CREATE VIEW evens AS SELECT k, ts FROM events WHERE v % 2 = 0")
    return s


@pytest.mark.parametrize("parallelism", [1, 2])
@pytest.mark.parametrize(("group_window", "tvf"), SPELLINGS)
def test_streaming_group_window_equals_tvf_and_batch(large: Path, parallelism: int,
                                                     group_window: str, tvf: str) -> None:
    batch = rows(session_over(large, "batch", 1), tvf)
    streaming = session_over(large, "streaming", parallelism)
    assert rows(streaming, tvf) == batch
    assert rows(streaming, group_window) == batch


LATE_SESSION = ("""SELECT k, SESSION_START(ts, INTERVAL '5' SECOND),
                           SESSION_END(ts, INTERVAL '5' SECOND), count(*), sum(v)
                    FROM events GROUP BY k, SESSION(ts, INTERVAL '5' SECOND)""",
                """SELECT k, window_start, window_end, count(*), sum(v)
                   FROM TABLE(SESSION(TABLE events PARTITION BY k, DESCRIPTOR(ts),
                                      INTERVAL '5' SECOND))
                   GROUP BY k, window_start, window_end""")


@pytest.fixture(scope="module")
def late(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small input plus a row of a at 4 s arriving after b's row at 25 s."""
    return write_events(tmp_path_factory.mktemp("gws") / "late.parquet",
                        [*ROWS[:6], ("a", 100, 4), ROWS[6]])


def test_streaming_session_drops_a_late_row(late: Path) -> None:
    """With the rows read one batch at a time (batch size 1) the late row sees watermark
    23 s, past a's session [1, 8): streaming drops it; batch mode keeps it."""
    sql = LATE_SESSION[0]
    streaming = session_over(late, "streaming", 1)
    streaming.sql("SET 'execution.batch-size' = '1'")
    assert rows(streaming, sql) == windowed(("a", 1, 8, 2, 4), ("a", 12, 19, 2, 10), ("b", 2, 7, 1, 2),
                                 ("b", 25, 31, 2, 12))
    batch = rows(session_over(late, "batch", 1), sql)
    assert batch == windowed(("a", 1, 9, 3, 104), ("a", 12, 19, 2, 10), ("b", 2, 7, 1, 2),
                             ("b", 25, 31, 2, 12))


def test_streaming_late_rows_as_the_tvf_form(late: Path) -> None:
    """Whatever is late is late for both spellings alike. At parallelism 1 only: with two
    source subtasks, which rows arrive behind the watermark depends on how the subtasks'
    batches interleave, which differs from one run to the next."""
    session = session_over(late, "streaming", 1)
    assert rows(session, LATE_SESSION[0]) == rows(session, LATE_SESSION[1])
