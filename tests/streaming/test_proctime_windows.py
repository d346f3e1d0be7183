"""Processing-time windows, interval joins and OVER aggregates from SQL text to rows.

Which window a row falls in depends on when it is read, so these tests check what holds
whatever the timing: every row is counted exactly once per window it belongs to (per key,
against the batch-mode count of the same reproducible datagen table), windows have the
declared size and are aligned to it, nothing is dropped as late, and an unbounded input
emits windows while the job runs. The exact firing moment is tested on a fake clock in
tests/runtime/operators/watermark/test_proctime_watermark.py.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter

import pytest

import flowsql
from flowsql.session import Session

# 300 rows at 1000 rows/s: the source sleeps to hold the rate, so the last rows are read
# at least 0.2 s after the first ones -- in a later 50 ms window
TABLE = """CREATE TABLE t (k INT, v INT, pt AS PROCTIME()) WITH (
  'connector' = 'datagen', 'number-of-rows' = '300', 'rows-per-second' = '1000',
  'fields.k.min' = '0', 'fields.k.max' = '3', 'fields.v.min' = '1', 'fields.v.max' = '9',
  'seed' = '11')"""


@pytest.fixture(scope="module")
def batch_counts() -> dict[int, tuple[int, int]]:
    """k -> (count, sum of v) in batch mode: the rows the table holds."""
    s = flowsql.connect()
    s.sql(TABLE)
    rows = s.sql("SELECT k, COUNT(*) AS c, SUM(v) AS s FROM t GROUP BY k").to_arrow()
    return {r["k"]: (r["c"], r["s"]) for r in rows.to_pylist()}


@pytest.fixture()
def session() -> Session:
    s = flowsql.connect()
    s.sql(TABLE)
    s.sql("SET 'execution.runtime-mode' = 'streaming'")
    return s


def _ms(value: dt.datetime) -> int:
    return round(value.replace(tzinfo=dt.UTC).timestamp() * 1000)


def windows(session: Session, window: str) -> list[tuple[int, int, int, int, int]]:
    """(k, start ms, end ms, count, sum) of each emitted window."""
    table = session.sql(f"""SELECT k, window_start, window_end, COUNT(*) AS c, SUM(v) AS s
                            FROM TABLE({window}) GROUP BY k, window_start, window_end
                         """).to_arrow()
    return [(r["k"], _ms(r["window_start"]), _ms(r["window_end"]), r["c"], r["s"])
            for r in table.to_pylist()]


def per_key(rows: list[tuple[int, int, int, int, int]]) -> dict[int, tuple[int, int]]:
    counts: Counter[int] = Counter()
    sums: Counter[int] = Counter()
    for k, _, _, c, s in rows:
        counts[k] += c
        sums[k] += s
    return {k: (counts[k], sums[k]) for k in counts}


def test_tumble_counts_every_row_once(session: Session,
                                      batch_counts: dict[int, tuple[int, int]]) -> None:
    rows = windows(session, "TUMBLE(TABLE t, DESCRIPTOR(pt), INTERVAL '50' MILLISECOND)")
    assert per_key(rows) == batch_counts
    assert all(end - start == 50 and start % 50 == 0 for _, start, end, _, _ in rows)
    assert len({start for _, start, _, _, _ in rows}) >= 2
    assert len(rows) == len({(k, start) for k, start, _, _, _ in rows})  # each fires once


def test_hop_counts_every_row_in_each_of_its_windows(
        session: Session, batch_counts: dict[int, tuple[int, int]]) -> None:
    rows = windows(session, "HOP(TABLE t, DESCRIPTOR(pt), INTERVAL '25' MILLISECOND, "
                            "INTERVAL '50' MILLISECOND)")
    # size / slide = 2: every row is in exactly two windows
    assert per_key(rows) == {k: (2 * c, 2 * s) for k, (c, s) in batch_counts.items()}
    assert all(end - start == 50 and start % 25 == 0 for _, start, end, _, _ in rows)


def test_cumulate_windows_grow_to_every_row(session: Session,
                                            batch_counts: dict[int, tuple[int, int]]) -> None:
    rows = windows(session, "CUMULATE(TABLE t, DESCRIPTOR(pt), INTERVAL '25' MILLISECOND, "
                            "INTERVAL '50' MILLISECOND)")
    assert all(start % 50 == 0 and end - start in (25, 50) for _, start, end, _, _ in rows)
    # the full-size windows hold every row once
    assert per_key([r for r in rows if r[2] - r[1] == 50]) == batch_counts
    # a cumulating window only grows: its first step is part of its full window
    full = {(k, start): c for k, start, end, c, _ in rows if end - start == 50}
    for k, start, end, c, _ in rows:
        if end - start == 25:
            assert c <= full[(k, start)]


def test_session_per_key_holds_all_its_rows(session: Session,
                                            batch_counts: dict[int, tuple[int, int]]) -> None:
    # every row is read within the hour: one session per key
    rows = windows(session, "SESSION(TABLE t PARTITION BY k, DESCRIPTOR(pt), "
                            "INTERVAL '1' HOUR)")
    assert per_key(rows) == batch_counts
    assert len(rows) == len(batch_counts)
    assert all(end - start >= 3_600_000 for _, start, end, _, _ in rows)


def test_no_row_is_dropped_as_late(session: Session) -> None:
    result = session.sql("""SELECT k, window_start, COUNT(*) AS c FROM TABLE(TUMBLE(TABLE t,
                              DESCRIPTOR(pt), INTERVAL '20' MILLISECOND))
                            GROUP BY k, window_start, window_end""")
    total = sum(result.to_arrow().column("c").to_pylist())
    assert total == 300
    run = result.changelog.run  # type: ignore[union-attr]
    assert run is not None
    late = [m.get("late_records_dropped", 0) for m in run.metrics()]
    assert sum(late) == 0


def test_unbounded_input_emits_windows_while_the_job_runs() -> None:
    s = flowsql.connect()
    s.sql("CREATE TABLE endless (k INT, pt AS PROCTIME()) WITH ('connector' = 'datagen', "
          "'rows-per-second' = '200', 'fields.k.min' = '0', 'fields.k.max' = '1')")
    s.sql("SET 'execution.runtime-mode' = 'streaming'")
    result = s.sql("""SELECT k, window_start, window_end, COUNT(*) AS c
                      FROM TABLE(TUMBLE(TABLE endless, DESCRIPTOR(pt),
                                        INTERVAL '50' MILLISECOND))
                      GROUP BY k, window_start, window_end""")
    assert result.changelog is not None and not result.changelog.bounded
    stream = result.stream()
    # a safety net only: should no window ever fire, stop the job instead of hanging
    guard = threading.Timer(120.0, result.changelog.cancel)
    guard.start()
    seen: list[dict[str, object]] = []
    try:
        for batch in stream:
            seen.extend(batch.to_pylist())
            if len({r["window_start"] for r in seen}) >= 3:
                break
    finally:
        cancelled_by_guard = result.changelog.run is not None and result.changelog.run.cancelled
        guard.cancel()
        stream.close()  # type: ignore[attr-defined]
    assert not cancelled_by_guard
    assert {r["op"] for r in seen} == {"+I"}
    for r in seen:
        start, end = r["window_start"], r["window_end"]
        assert isinstance(start, dt.datetime) and isinstance(end, dt.datetime)
        assert _ms(end) - _ms(start) == 50 and _ms(start) % 50 == 0
    assert len({(r["k"], r["window_start"]) for r in seen}) == len(seen)


def test_interval_join_on_proctimes(session: Session) -> None:
    # a self-join by a sequence id: both copies of a row are read well within an hour
    session.sql("CREATE TABLE ids (id INT, pt AS PROCTIME()) WITH ('connector' = 'datagen', "
                "'fields.id.kind' = 'sequence', 'fields.id.start' = '1', "
                "'fields.id.end' = '200', 'rows-per-second' = '2000')")
    table = session.sql("""SELECT a.id AS x, b.id AS y FROM ids a LEFT JOIN ids b
                           ON a.id = b.id AND b.pt BETWEEN a.pt - INTERVAL '1' HOUR
                                                       AND a.pt + INTERVAL '1' HOUR
                        """).to_arrow()
    assert sorted(zip(table.column("x").to_pylist(), table.column("y").to_pylist())) == [
        (i, i) for i in range(1, 201)]


def test_over_ordered_by_proctime_numbers_each_key(session: Session,
                                                   batch_counts: dict[int, tuple[int, int]]
                                                   ) -> None:
    table = session.sql("""SELECT k, COUNT(*) OVER (PARTITION BY k ORDER BY pt ROWS BETWEEN
                                    UNBOUNDED PRECEDING AND CURRENT ROW) AS n FROM t
                        """).to_arrow()
    numbered: dict[int, list[int]] = {}
    for r in table.to_pylist():
        numbered.setdefault(r["k"], []).append(r["n"])
    assert {k: sorted(ns) for k, ns in numbered.items()} == {
        k: list(range(1, c + 1)) for k, (c, _) in batch_counts.items()}
