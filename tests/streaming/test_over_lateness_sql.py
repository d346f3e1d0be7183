"""Bounded event-time OVER aggregates judge lateness per partition key, as Flink's
RowTime{Range,Rows}BoundedPrecedingFunction do: a row is late only when its rowtime is at
or before the last rowtime already emitted for its key, so a row behind the watermark is
kept when its key has emitted nothing that late. Hand-checked rows, at parallelism 1 and 2.

Every table has ``WATERMARK FOR ts AS ts - INTERVAL '2' SECOND`` and a watermark after
every record; rowtimes are seconds after 2024-01-01.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import flowsql

EPOCH = dt.datetime(2024, 1, 1)
RANGE_5S = "PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL '5' SECOND PRECEDING AND CURRENT ROW"
ROWS_1 = "PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW"


def _write(directory: Path, files: list[list[tuple[str, int, int]]]) -> Path:
    """One CSV file per list of (k, ts seconds, v), named in order: at parallelism 2 the
    source subtask ``i`` reads file ``i``."""
    directory.mkdir()
    for i, rows in enumerate(files):
        (directory / f"{i}.csv").write_text("".join(
            f"{k},{EPOCH + dt.timedelta(seconds=s)},{v}\n" for k, s, v in rows))
    return directory


def _rows(directory: Path, parallelism: int, window: str) -> list[tuple[object, ...]]:
    with flowsql.connect(**{"execution.runtime-mode": "streaming",
                            "pipeline.auto-watermark-interval": "0",
                            "execution.batch-size": "1",
                            "parallelism.default": str(parallelism)}) as session:
        session.sql(f"""CREATE TABLE t (k STRING, ts TIMESTAMP(3), v BIGINT,
                          WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
                        WITH ('connector' = 'filesystem', 'path' = '{directory}',
                              'format' = 'csv')""")
        table = session.sql(f"SELECT k, ts, v, SUM(v) OVER ({window}) AS s, "
                            f"COUNT(*) OVER ({window}) AS c FROM t").to_arrow()
    return sorted(((r["k"], int((r["ts"] - EPOCH).total_seconds()), r["v"], r["s"], r["c"])
                   for r in table.to_pylist()), key=repr)


def test_a_row_behind_the_watermark_is_dropped_only_at_or_before_its_keys_last_emitted_row(
        tmp_path: Path) -> None:
    # a@10 moves the watermark to 8 s and releases a@1 (a's last emitted rowtime: 1 s);
    # a@5 v5 is behind the watermark but after 1 s: kept; a@1 v100 is at 1 s: late;
    # a@5 v50 is kept (a peer of a@5 v5); b@3 is kept: b has emitted nothing yet
    directory = _write(tmp_path / "t", [[("a", 1, 1), ("a", 10, 10), ("a", 5, 5),
                                         ("a", 1, 100), ("a", 5, 50), ("b", 3, 3)]])
    assert _rows(directory, 1, RANGE_5S) == sorted([
        ("a", 1, 1, 1, 1),
        ("a", 5, 5, 56, 3), ("a", 5, 50, 56, 3),   # [0, 5]: 1, 5, 50
        ("a", 10, 10, 65, 3),                       # [5, 10]: 5, 50, 10
        ("b", 3, 3, 3, 1)], key=repr)
    assert _rows(directory, 1, ROWS_1) == sorted([
        ("a", 1, 1, 1, 1), ("a", 5, 5, 6, 2), ("a", 5, 50, 55, 2), ("a", 10, 10, 60, 2),
        ("b", 3, 3, 3, 1)], key=repr)


# Each source subtask reads one key's rows in the order a@1, a@10, a@5. Whatever the
# interleaving of the two subtasks, a@5 arrives before any watermark reaches 10 s (its
# own subtask's watermark is 8 s until it ends), so a's last emitted rowtime is at most
# 1 s and a@5 is kept, as in Flink; the watermark alone would drop it whenever the other
# subtask's watermark has passed 5 s.
PER_SUBTASK = [[("a", 1, 1), ("a", 10, 10), ("a", 5, 5)],
               [("b", 2, 2), ("b", 12, 12), ("b", 6, 6)]]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_per_key_lateness_at_parallelism_one_and_two(tmp_path: Path, parallelism: int) -> None:
    directory = _write(tmp_path / "t", PER_SUBTASK)
    assert _rows(directory, parallelism, RANGE_5S) == sorted([
        ("a", 1, 1, 1, 1), ("a", 5, 5, 6, 2), ("a", 10, 10, 15, 2),   # [5, 10]: 5, 10
        ("b", 2, 2, 2, 1), ("b", 6, 6, 8, 2), ("b", 12, 12, 12, 1)], key=repr)
    assert _rows(directory, parallelism, ROWS_1) == sorted([
        ("a", 1, 1, 1, 1), ("a", 5, 5, 6, 2), ("a", 10, 10, 15, 2),
        ("b", 2, 2, 2, 1), ("b", 6, 6, 8, 2), ("b", 12, 12, 18, 2)], key=repr)
