"""User-defined aggregates over windows (``f(x) OVER (...)``) in batch mode, function and
class forms, at parallelism 1 and 2 against DuckDB: the whole partition, running frames
(RANGE with peers, ROWS), sliding frames (a class with retract slides, one without starts
afresh per frame), an empty frame; errors naming the function and the partition; and the
refusal of a function-form aggregate over an unbounded frame over a stream."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import ExecutionError, PlanError

ROWS = ("(VALUES (1, 'a', 3), (2, 'a', 1), (3, 'a', 7), (4, 'b', 2), (5, 'b', NULL), "
        "(6, 'a', 4), (7, 'b', 9), (8, 'a', 4), (9, 'b', 9)) v(i, k, x)")
FUNCTIONS = {"my_mean": "Mean", "my_range": "Range", "my_collect": "Collect",
             "spread": "spread", "fails_on_nine": "FailsOnNine"}


@pytest.fixture(scope="module", params=[1, 2], ids=["parallelism1", "parallelism2"])
def session(request: pytest.FixtureRequest) -> Iterator[flowsql.Session]:
    s = flowsql.connect(parallelism=request.param)
    s.set("optimizer.small-query-on-one-subtask", "false")
    for name, target in FUNCTIONS.items():
        s.sql(f"CREATE FUNCTION {name} AS 'tests.udfs.aggregates.{target}'")
    yield s
    s.close()


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(round(v, 9) if isinstance(v, float) else v for v in r.values())
                  for r in table.to_pylist())


def _same(session: flowsql.Session, ours: str, oracle: str) -> None:
    theirs = duckdb.sql(oracle).fetchall()
    assert _rows(session.sql(ours).to_arrow()) == sorted(
        tuple(round(v, 9) if isinstance(v, float) else v for v in r) for r in theirs)


def test_over_the_whole_partition(session: flowsql.Session) -> None:
    _same(session,
          f"SELECT i, my_mean(x) OVER (PARTITION BY k) AS m, spread(x) OVER (PARTITION BY k) "
          f"AS s, my_collect(k) OVER () AS c FROM {ROWS}",
          f"SELECT i, avg(x) OVER (PARTITION BY k), max(x) OVER (PARTITION BY k) - min(x) "
          f"OVER (PARTITION BY k), 'a|a|a|a|a|b|b|b|b' FROM {ROWS}")


def test_running_frames_with_peers(session: flowsql.Session) -> None:
    w = "(PARTITION BY k ORDER BY x)"  # RANGE: peers (equal x) share the value
    _same(session,
          f"SELECT i, my_mean(x) OVER {w} AS m, my_range(x) OVER {w} AS r, spread(x) OVER {w} "
          f"AS s, my_mean(x) OVER (PARTITION BY k ORDER BY i ROWS UNBOUNDED PRECEDING) AS mr "
          f"FROM {ROWS}",
          f"SELECT i, avg(x) OVER {w}, max(x) OVER {w} - min(x) OVER {w}, "
          f"max(x) OVER {w} - min(x) OVER {w}, "
          f"avg(x) OVER (PARTITION BY k ORDER BY i ROWS UNBOUNDED PRECEDING) FROM {ROWS}")


def test_sliding_frames(session: flowsql.Session) -> None:
    rows = "ROWS BETWEEN 2 PRECEDING AND CURRENT ROW"
    around = "ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING"
    _same(session,
          f"SELECT i, my_mean(x) OVER (ORDER BY i {rows}) AS m, "
          f"my_range(x) OVER (PARTITION BY k ORDER BY i {around}) AS r, "
          f"my_collect(CAST(x AS STRING)) OVER (ORDER BY i {around}) AS c, "
          f"my_mean(x) OVER (ORDER BY i ROWS BETWEEN 3 FOLLOWING AND 4 FOLLOWING) AS e "
          f"FROM {ROWS}",
          f"SELECT i, avg(x) OVER (ORDER BY i {rows}), "
          f"max(x) OVER (PARTITION BY k ORDER BY i {around}) - "
          f"min(x) OVER (PARTITION BY k ORDER BY i {around}), "
          f"coalesce(string_agg(CAST(x AS VARCHAR), '|' ORDER BY CAST(x AS VARCHAR)) "
          f"OVER (ORDER BY i {around}), ''), "
          f"avg(x) OVER (ORDER BY i ROWS BETWEEN 3 FOLLOWING AND 4 FOLLOWING) FROM {ROWS}")


def test_a_failing_aggregate_names_the_function_and_the_partition(
        session: flowsql.Session) -> None:
    with pytest.raises(ExecutionError, match=r"aggregate function fails_on_nine failed in "
                                             r"accumulate\(\) on a window frame in the "
                                             r"partition \(k = 'b'\)"):
        session.sql(f"SELECT i, fails_on_nine(x) OVER (PARTITION BY k ORDER BY i) FROM {ROWS}")


def test_over_a_stream_a_function_over_an_unbounded_frame_is_refused(
        tmp_path: pytest.TempPathFactory) -> None:
    s = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    s.sql("CREATE FUNCTION spread AS 'tests.udfs.aggregates.spread'")
    s.sql("CREATE TABLE e (k STRING, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) "
          f"WITH ('connector' = 'filesystem', 'path' = '{tmp_path}', 'format' = 'parquet')")
    with pytest.raises(PlanError, match="UNBOUNDED PRECEDING frame cannot compute the "
                                        "user-defined aggregate spread: .* declare it as a "
                                        "class"):
        s.sql("SELECT k, spread(v) OVER (PARTITION BY k ORDER BY ts) FROM e")
    s.close()
