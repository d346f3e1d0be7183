"""``FILTER (WHERE ..)`` and VAR_POP / VAR_SAMP / STDDEV_POP / STDDEV_SAMP in streaming
mode, as Flink computes them: in the changelog GROUP BY (also over an updating input), in
TUMBLE window aggregates and in SESSION window aggregates. Hand-checked rows, at
parallelism 1 and 2.

Rowtimes are seconds after 2024-01-01; ``WATERMARK FOR ts AS ts - INTERVAL '2' SECOND``,
no row is late. The input (k, ts, v), in file order:

    a@1 v1   b@2 v2   a@3 v5   a@12 v4   b@14 v6   c@25 v7
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import flowsql

EPOCH = dt.datetime(2024, 1, 1)
ROWS = [("a", 1, 1), ("b", 2, 2), ("a", 3, 5), ("a", 12, 4), ("b", 14, 6), ("c", 25, 7)]


def _session(tmp_path: Path, parallelism: int) -> flowsql.Session:
    directory = tmp_path / "t"
    directory.mkdir()
    files: list[list[tuple[str, int, int]]] = [ROWS[i::parallelism] for i in range(parallelism)]
    for i, rows in enumerate(files):
        (directory / f"{i}.csv").write_text("".join(
            f"{k},{EPOCH + dt.timedelta(seconds=s)},{v}\n" for k, s, v in rows))
    session = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                 "pipeline.auto-watermark-interval": "0",
                                 "execution.batch-size": "1",
                                 "parallelism.default": str(parallelism)})
    session.sql(f"""CREATE TABLE t (k STRING, ts TIMESTAMP(3), v BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
                    WITH ('connector' = 'filesystem', 'path' = '{directory}',
                          'format' = 'csv')""")
    return session


def _seconds(t: dt.datetime) -> int:
    return int((t - EPOCH).total_seconds())


@pytest.mark.parametrize("parallelism", [1, 2])
def test_filter_in_changelog_group_by(tmp_path: Path, parallelism: int) -> None:
    session = _session(tmp_path, parallelism)
    table = session.sql("""SELECT k, COUNT(*) FILTER (WHERE v > 1) AS c,
                                  SUM(v) FILTER (WHERE v < 5) AS s,
                                  MAX(v) FILTER (WHERE v < 5) AS m,
                                  COUNT(DISTINCT v) FILTER (WHERE v <> 4) AS d
                           FROM t GROUP BY k""").to_arrow()
    assert sorted(tuple(r.values()) for r in table.to_pylist()) == [
        ("a", 2, 5, 4, 2),          # v 1, 5, 4
        ("b", 2, 2, 2, 2),          # v 2, 6
        ("c", 1, None, None, 1),    # v 7: no row passes v < 5
    ]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_filter_in_tumble_window_aggregate(tmp_path: Path, parallelism: int) -> None:
    session = _session(tmp_path, parallelism)
    table = session.sql("""SELECT window_start, window_end, COUNT(*) FILTER (WHERE v > 1) AS c,
                                  SUM(v) FILTER (WHERE k = 'a') AS s,
                                  MAX(v) FILTER (WHERE k <> 'a') AS m,
                                  COUNT(DISTINCT k) FILTER (WHERE v >= 2) AS dk
                           FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
                           GROUP BY window_start, window_end""").to_arrow()
    assert sorted((_seconds(r["window_start"]), _seconds(r["window_end"]), r["c"], r["s"],
                   r["m"], r["dk"]) for r in table.to_pylist()) == [
        (0, 10, 2, 6, 2, 2),        # a1 b2 a5
        (10, 20, 2, 4, 6, 2),       # a4 b6
        (20, 30, 1, None, 7, 1),    # c7
    ]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_filter_in_session_window_aggregate(tmp_path: Path, parallelism: int) -> None:
    session = _session(tmp_path, parallelism)
    table = session.sql("""SELECT k, window_start, window_end,
                                  COUNT(*) FILTER (WHERE v > 1) AS c,
                                  SUM(v) FILTER (WHERE v < 5) AS s
                           FROM TABLE(SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts),
                                              INTERVAL '5' SECOND))
                           GROUP BY k, window_start, window_end""").to_arrow()
    assert sorted((r["k"], _seconds(r["window_start"]), _seconds(r["window_end"]), r["c"],
                   r["s"]) for r in table.to_pylist()) == [
        ("a", 1, 8, 1, 1), ("a", 12, 17, 1, 4),
        ("b", 2, 7, 1, 2), ("b", 14, 19, 1, None),
        ("c", 25, 30, 1, None),
    ]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_variances_in_changelog_group_by(tmp_path: Path, parallelism: int) -> None:
    session = _session(tmp_path, parallelism)
    table = session.sql("""SELECT k, VAR_POP(v) AS vp, VAR_SAMP(v) AS vs,
                                  STDDEV_POP(v) AS sp, STDDEV_SAMP(v) AS ss
                           FROM t GROUP BY k""").to_arrow()
    assert sorted(tuple(r.values()) for r in table.to_pylist()) == [
        # v 1, 5, 4: mean 10/3, squared deviations 49/9 + 25/9 + 4/9 = 26/3
        ("a", pytest.approx(26 / 9), pytest.approx(13 / 3), pytest.approx((26 / 9) ** 0.5),
         pytest.approx((13 / 3) ** 0.5)),
        ("b", 4.0, 8.0, 2.0, pytest.approx(8 ** 0.5)),     # v 2, 6
        ("c", 0.0, None, 0.0, None),                       # one row: no sample variance
    ]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_variances_over_an_updating_input(tmp_path: Path, parallelism: int) -> None:
    """The per-key sums change as rows arrive: every update retracts the old sum from the
    moments and adds the new one; the final sums are a 10, b 8, c 7."""
    session = _session(tmp_path, parallelism)
    table = session.sql("""SELECT VAR_POP(s) AS vp, VAR_SAMP(s) AS vs, STDDEV_POP(s) AS sp,
                                  STDDEV_SAMP(s) AS ss, COUNT(*) AS n
                           FROM (SELECT k, SUM(v) AS s FROM t GROUP BY k)""").to_arrow()
    # mean 25/3, squared deviations 25/9 + 1/9 + 16/9 = 14/3
    assert table.to_pylist() == [{
        "vp": pytest.approx(14 / 9), "vs": pytest.approx(7 / 3),
        "sp": pytest.approx((14 / 9) ** 0.5), "ss": pytest.approx((7 / 3) ** 0.5), "n": 3}]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_variances_in_tumble_and_session_window_aggregates(tmp_path: Path,
                                                           parallelism: int) -> None:
    session = _session(tmp_path, parallelism)
    tumble = session.sql("""SELECT window_start, window_end, VAR_POP(v) AS vp,
                                   VAR_SAMP(v) AS vs, STDDEV_SAMP(v) AS ss
                            FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
                            GROUP BY window_start, window_end""").to_arrow()
    assert sorted((_seconds(r["window_start"]), r["vp"], r["vs"], r["ss"])
                  for r in tumble.to_pylist()) == [
        # v 1, 2, 5: mean 8/3, squared deviations 25/9 + 4/9 + 49/9 = 26/3
        (0, pytest.approx(26 / 9), pytest.approx(13 / 3), pytest.approx((13 / 3) ** 0.5)),
        (10, 1.0, 2.0, pytest.approx(2 ** 0.5)),            # v 4, 6
        (20, 0.0, None, None),                              # v 7
    ]
    sessions = session.sql("""SELECT k, window_start, STDDEV_POP(v) AS sp, VAR_SAMP(v) AS vs
                              FROM TABLE(SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts),
                                                 INTERVAL '5' SECOND))
                              GROUP BY k, window_start, window_end""").to_arrow()
    assert sorted((r["k"], _seconds(r["window_start"]), r["sp"], r["vs"])
                  for r in sessions.to_pylist()) == [
        ("a", 1, 2.0, 8.0),             # v 1, 5
        ("a", 12, 0.0, None), ("b", 2, 0.0, None), ("b", 14, 0.0, None),
        ("c", 25, 0.0, None),
    ]


@pytest.mark.parametrize("parallelism", [1, 2])
def test_filter_and_variance_in_a_cascading_window_aggregate(tmp_path: Path,
                                                             parallelism: int) -> None:
    """Per-key counts of each TUMBLE window, then aggregated per window again:
    [0, 10) a 2 b 1, [10, 20) a 1 b 1, [20, 30) c 1."""
    session = _session(tmp_path, parallelism)
    table = session.sql("""SELECT window_start, VAR_POP(c) AS vp, VAR_SAMP(c) AS vs,
                                  COUNT(*) FILTER (WHERE c > 1) AS busy
                           FROM (SELECT k, window_start, window_end, COUNT(*) AS c
                                 FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts),
                                                   INTERVAL '10' SECOND))
                                 GROUP BY k, window_start, window_end)
                           GROUP BY window_start, window_end""").to_arrow()
    assert sorted((_seconds(r["window_start"]), r["vp"], r["vs"], r["busy"])
                  for r in table.to_pylist()) == [
        (0, 0.25, 0.5, 1), (10, 0.0, 0.0, 0), (20, 0.0, None, 0)]
