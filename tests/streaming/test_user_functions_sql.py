"""Python UDFs in streaming mode: a scalar function in a streamed projection and filter,
user-defined aggregates in TUMBLE and HOP window aggregates (at parallelism 1 and 2,
hand-checked rows, equal to batch mode), the changelog GROUP BY that cannot run a
function-form one, and class-form aggregates (accumulators) in the changelog GROUP BY over
insert-only and retracting inputs (a GROUP BY, an outer join), in a window and in OVER
aggregates."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import flowsql
from flowsql.errors import PlanError

EPOCH = dt.datetime(2024, 1, 1)
#: (key, value, second) in event-time order, so no row is late
EVENTS = [("a", 1, 1), ("b", 2, 4), ("a", 9, 6), ("a", 3, 11), ("b", 4, 13), ("b", 10, 14),
          ("a", 5, 21)]


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("udf_stream") / "events.parquet"
    pq.write_table(pa.table({
        "k": [e[0] for e in EVENTS], "v": pa.array([e[1] for e in EVENTS], pa.int64()),
        "ts": pa.array([EPOCH + dt.timedelta(seconds=e[2]) for e in EVENTS],
                       pa.timestamp("ms"))}), path)
    return path


def _session(events: Path, mode: str, parallelism: int = 1) -> flowsql.Session:
    s = flowsql.connect(**{"execution.runtime-mode": mode,
                           "pipeline.auto-watermark-interval": "0",
                           "parallelism.default": str(parallelism)})
    s.sql(f"""CREATE TABLE e (k STRING, v BIGINT, ts TIMESTAMP(3),
                WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
              WITH ('connector' = 'filesystem', 'path' = '{events}')""")
    s.sql("CREATE FUNCTION times_two AS 'tests.udfs.scalars.times_two'")
    s.sql("CREATE FUNCTION is_even AS 'tests.udfs.scalars.is_even'")
    s.sql("CREATE FUNCTION spread AS 'tests.udfs.aggregates.spread'")
    s.sql("CREATE FUNCTION weighted_avg AS 'tests.udfs.aggregates.weighted_avg'")
    return s


@pytest.fixture(params=[1, 2], ids=["parallelism1", "parallelism2"])
def streaming(request: pytest.FixtureRequest, events: Path) -> Iterator[flowsql.Session]:
    s = _session(events, "streaming", request.param)
    yield s
    s.close()


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _at(second: int) -> dt.datetime:
    return EPOCH + dt.timedelta(seconds=second)


def test_scalar_function_in_a_streamed_projection_and_filter(
        streaming: flowsql.Session) -> None:
    got = _rows(streaming.sql("SELECT k, times_two(v) AS d FROM e WHERE is_even(v)").to_arrow())
    assert got == [("b", 4), ("b", 8), ("b", 20)]


TUMBLE = ("SELECT k, window_start, spread(v) AS sp, weighted_avg(v, v) AS wa, sum(v) AS s "
          "FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
          "GROUP BY k, window_start, window_end")


def test_user_aggregates_in_a_tumbling_window(streaming: flowsql.Session, events: Path) -> None:
    expected = [("a", _at(0), 8, 82 / 10, 10), ("a", _at(10), 0, 3.0, 3),
                ("a", _at(20), 0, 5.0, 5), ("b", _at(0), 0, 2.0, 2),
                ("b", _at(10), 6, 116 / 14, 14)]
    assert _rows(streaming.sql(TUMBLE).to_arrow()) == expected
    batch = _session(events, "batch")
    assert _rows(batch.sql(TUMBLE).to_arrow()) == expected
    batch.close()


def test_user_aggregate_in_a_hopping_window(streaming: flowsql.Session) -> None:
    got = streaming.sql(
        "SELECT k, window_start, spread(v) AS sp FROM TABLE(HOP(TABLE e, DESCRIPTOR(ts), "
        "INTERVAL '5' SECOND, INTERVAL '10' SECOND)) WHERE k = 'b' "
        "GROUP BY k, window_start, window_end").to_arrow()
    # b: 2 @4s, 4 @13s, 10 @14s; windows of 10 s every 5 s
    assert _rows(got) == [("b", _at(-5), 0), ("b", _at(0), 0), ("b", _at(5), 6),
                          ("b", _at(10), 6)]


def test_changelog_group_by_cannot_run_a_user_aggregate(streaming: flowsql.Session) -> None:
    with pytest.raises(PlanError, match="streaming GROUP BY cannot compute the user-defined "
                                        "aggregate spread: .* has no retract step"):
        streaming.sql("SELECT k, spread(v) FROM e GROUP BY k")


# -- class-form aggregates (accumulators) in the changelog GROUP BY ------------------------

def _classes(session: flowsql.Session) -> flowsql.Session:
    for name, cls in (("my_mean", "Mean"), ("my_range", "Range"), ("my_collect", "Collect")):
        session.sql(f"CREATE FUNCTION {name} AS 'tests.udfs.aggregates.{cls}'")
    return session


def test_class_aggregates_in_a_changelog_group_by(streaming: flowsql.Session) -> None:
    got = _classes(streaming).sql(
        "SELECT k, my_mean(v) AS m, my_range(v) AS r, count(*) AS n, sum(v) AS s "
        "FROM e GROUP BY k").to_arrow()
    # a: 1, 9, 3, 5; b: 2, 4, 10
    assert _rows(got) == [("a", 4.5, 8, 4, 18), ("b", 16 / 3, 8, 3, 16)]


def test_a_retracting_class_aggregate_over_a_group_by(streaming: flowsql.Session) -> None:
    # the inner GROUP BY updates each key's count and sum record by record; the outer one
    # retracts the previous values (my_mean and my_collect have retract)
    got = _classes(streaming).sql(
        "SELECT n, my_mean(s) AS m, my_collect(k) AS ks, count(*) AS c FROM "
        "(SELECT k, count(*) AS n, sum(v) AS s FROM e GROUP BY k) GROUP BY n").to_arrow()
    assert _rows(got) == [(3, 16.0, "b", 1), (4, 18.0, "a", 1)]


def test_a_retracting_class_aggregate_over_an_outer_join(streaming: flowsql.Session) -> None:
    # a left row that arrives before its match is first emitted NULL-padded, then
    # retracted when the match arrives (a1 before a9, b2 before b10)
    query = ("SELECT l.k, my_collect(CAST(r.v AS STRING)) AS vs, my_mean(r.v) AS m, "
             "count(*) AS c FROM e l LEFT JOIN e r ON l.k = r.k AND l.v < 4 AND r.v > 4 "
             "GROUP BY l.k")
    got = _classes(streaming).sql(query).to_arrow()
    # a: l.v in (1, 3) each pair with r.v in (9, 5); l.v in (9, 5) have no match (NULL)
    # b: l.v = 2 pairs with r.v = 10; l.v in (4, 10) have no match
    assert _rows(got) == [("a", "5|5|9|9", 7.0, 6), ("b", "10", 10.0, 3)]


def test_a_class_aggregate_without_retract_over_an_updating_input_is_refused(
        streaming: flowsql.Session) -> None:
    with pytest.raises(PlanError, match=r"updating input .* the user-defined aggregate "
                                        r"my_range has no retract\(\) method"):
        _classes(streaming).sql("SELECT n, my_range(s) FROM "
                                "(SELECT k, count(*) AS n, sum(v) AS s FROM e GROUP BY k) "
                                "GROUP BY n")


def test_class_aggregate_in_a_tumbling_window(streaming: flowsql.Session, events: Path) -> None:
    query = ("SELECT k, window_start, my_mean(v) AS m, my_range(v) AS r "
             "FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
             "GROUP BY k, window_start, window_end")
    expected = [("a", _at(0), 5.0, 8), ("a", _at(10), 3.0, 0), ("a", _at(20), 5.0, 0),
                ("b", _at(0), 2.0, 0), ("b", _at(10), 7.0, 6)]
    assert _rows(_classes(streaming).sql(query).to_arrow()) == expected
    batch = _classes(_session(events, "batch"))
    assert _rows(batch.sql(query).to_arrow()) == expected
    batch.close()


def test_class_and_function_aggregates_over_windows_equal_batch_mode(
        streaming: flowsql.Session, events: Path) -> None:
    # over a stream the OVER aggregates of one query share their window
    running = "(PARTITION BY k ORDER BY ts)"
    sliding = "(PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)"
    queries = {
        f"SELECT k, v, my_mean(v) OVER {running} AS m, my_collect(CAST(v AS STRING)) "
        f"OVER {running} AS c FROM e":
        # a: 1, 9, 3, 5; b: 2, 4, 10 (in rowtime order)
        [("a", 1, 1.0, "1"), ("a", 3, 13 / 3, "1|3|9"), ("a", 5, 4.5, "1|3|5|9"),
         ("a", 9, 5.0, "1|9"), ("b", 2, 2.0, "2"), ("b", 4, 3.0, "2|4"),
         ("b", 10, 16 / 3, "10|2|4")],
        f"SELECT k, v, my_range(v) OVER {sliding} AS r, spread(v) OVER {sliding} AS s, "
        f"my_mean(v) OVER {sliding} AS m FROM e":
        [("a", 1, 0, 0, 1.0), ("a", 3, 6, 6, 6.0), ("a", 5, 2, 2, 4.0), ("a", 9, 8, 8, 5.0),
         ("b", 2, 0, 0, 2.0), ("b", 4, 2, 2, 3.0), ("b", 10, 6, 6, 7.0)]}
    batch = _classes(_session(events, "batch"))
    _classes(streaming)
    for query, expected in queries.items():
        assert _rows(streaming.sql(query).to_arrow()) == expected
        assert _rows(batch.sql(query).to_arrow()) == expected
    batch.close()
