"""Window joins from SQL text to rows, against Flink's documented semantics.

Two inputs, event times in seconds after 2024-01-01 00:00:00, in file order, under
``WATERMARK FOR ts AS ts - INTERVAL '2' SECOND``; each file is out of order by less than
the delay, so no row is late and streaming mode must give batch mode's rows:

    l: (a, 1, 1) (b, 2, 4) (c, 4, 11) (a, 5, 9) (a, 3, 12) (b, 6, 25)   (k, v, ts)
    r: (a, 10, 2) (c, 20, 3) (a, 30, 14) (b, 40, 15) (d, 50, 27)

With 10-second tumbling windows, [0, 10) holds l: a1 b2 a5, r: a10 c20; [10, 20) holds
l: c4 a3, r: a30 b40; [20, 30) holds l: b6, r: d50.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import PlanError
from tests.harness.event_tables import LEFT, RIGHT, at, events_session, sorted_rows, write_events

N = None




@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("window_join")
    return {"l": write_events(root / "l.parquet", LEFT), "r": write_events(root / "r.parquet", RIGHT),
            # late_l's third row arrives after the watermark passed its window (see below)
            "late_l": write_events(root / "late_l.parquet", [("a", 1, 1), ("a", 2, 15),
                                                       ("a", 3, 5)]),
            "late_r": write_events(root / "late_r.parquet", [("a", 10, 2), ("a", 20, 16)])}



@pytest.fixture(scope="module")
def streaming(files: dict[str, Path]) -> flowsql.Session:
    return events_session(files, "streaming")


@pytest.fixture(scope="module")
def batch(files: dict[str, Path]) -> flowsql.Session:
    return events_session(files, "batch")



def window(table: str, kind: str = "tumble") -> str:
    return {"tumble": f"TUMBLE(TABLE {table}, DESCRIPTOR(ts), INTERVAL '10' SECOND)",
            "hop": f"HOP(TABLE {table}, DESCRIPTOR(ts), INTERVAL '5' SECOND, "
                   "INTERVAL '10' SECOND)",
            "cumulate": f"CUMULATE(TABLE {table}, DESCRIPTOR(ts), INTERVAL '5' SECOND, "
                        "INTERVAL '10' SECOND)"}[kind]


def join(kind: str, window_kind: str = "tumble", left: str = "l", right: str = "r") -> str:
    return f"""SELECT L.k, L.v, R.k AS rk, R.v AS rv, L.window_start AS ls, R.window_start AS rs
               FROM TABLE({window(left, window_kind)}) L
               {kind} JOIN TABLE({window(right, window_kind)}) R
               ON L.window_start = R.window_start AND L.window_end = R.window_end
                  AND L.k = R.k"""


def test_plan_shows_a_window_join(streaming: flowsql.Session) -> None:
    plan = streaming.sql(join("LEFT")).explain().split("== Physical Plan ==")[1]
    assert ("WindowJoin[left] window=(window_start, window_end) keys=[window_start = "
            "window_start, window_end = window_end, k = k]") in plan
    assert "StreamJoin" not in plan


def test_left_window_join_rows_by_hand_and_an_insert_only_changelog(
        streaming: flowsql.Session) -> None:
    batches = list(streaming.sql(join("LEFT")).stream())
    assert {op for b in batches for op in b.column(0).to_pylist()} == {"+I"}
    result = pa.Table.from_batches(batches).drop_columns(["op"])
    got = sorted((tuple(r.values()) for r in result.to_pylist()), key=repr)
    assert got == sorted([("a", 1, "a", 10, at(0), at(0)), ("a", 5, "a", 10, at(0), at(0)),
                          ("b", 2, N, N, at(0), N), ("c", 4, N, N, at(10), N),
                          ("a", 3, "a", 30, at(10), at(10)), ("b", 6, N, N, at(20), N)],
                         key=repr)


@pytest.mark.parametrize("window_kind", ["tumble", "hop", "cumulate"])
@pytest.mark.parametrize("kind", ["INNER", "LEFT", "RIGHT", "FULL"])
def test_final_rows_equal_batch_mode(streaming: flowsql.Session, batch: flowsql.Session,
                                     kind: str, window_kind: str) -> None:
    query = join(kind, window_kind)
    assert f"WindowJoin[{kind.lower()}]" in streaming.sql(query).explain()
    expected = sorted_rows(batch, query)
    assert expected
    assert sorted_rows(streaming, query) == expected


@pytest.mark.parametrize("predicate", [
    "EXISTS (SELECT 1 FROM TABLE({r}) R WHERE L.window_start = R.window_start "
    "AND L.window_end = R.window_end AND L.k = R.k)",
    "NOT EXISTS (SELECT 1 FROM TABLE({r}) R WHERE L.window_start = R.window_start "
    "AND L.window_end = R.window_end AND L.k = R.k)",
    "L.k IN (SELECT R.k FROM TABLE({r}) R WHERE L.window_start = R.window_start "
    "AND L.window_end = R.window_end)",
    "L.k NOT IN (SELECT R.k FROM TABLE({r}) R WHERE L.window_start = R.window_start "
    "AND L.window_end = R.window_end)"])
def test_semi_and_anti_window_joins_equal_batch_mode(
        streaming: flowsql.Session, batch: flowsql.Session, predicate: str) -> None:
    query = (f"SELECT L.k, L.v FROM TABLE({window('l')}) L WHERE "
             + predicate.format(r=window("r")))
    kind = "anti" if "NOT" in predicate else "semi"
    assert f"WindowJoin[{kind}]" in streaming.sql(query).explain()
    expected = sorted_rows(batch, query)
    assert expected
    assert sorted_rows(streaming, query) == expected


def test_window_top_n_after_a_window_join(streaming: flowsql.Session,
                                          batch: flowsql.Session) -> None:
    query = f"""SELECT k, v, rv, window_start FROM (
                  SELECT L.k, L.v, R.v AS rv, L.window_start, ROW_NUMBER() OVER (
                      PARTITION BY L.window_start, L.window_end ORDER BY L.v DESC) AS rn
                  FROM TABLE({window('l')}) L JOIN TABLE({window('r')}) R
                  ON L.window_start = R.window_start AND L.window_end = R.window_end
                     AND L.k = R.k) WHERE rn = 1"""
    plan = streaming.sql(query).explain()
    assert "WindowRank" in plan and "WindowJoin[inner]" in plan
    assert sorted_rows(streaming, query) == sorted_rows(batch, query) == [
        ("a", 3, 30, at(10)), ("a", 5, 10, at(0))]


def test_a_row_of_a_fired_window_is_dropped_as_late(streaming: flowsql.Session,
                                                    batch: flowsql.Session) -> None:
    """One-row batches alternate between the inputs: l a1, r a10, l a2 (l's watermark
    13 s), r a20 (r's 14 s): the combined watermark 13 s fires [0, 10); then l a3 at 5 s
    arrives for that window and is dropped. Batch mode keeps it."""
    query = join("LEFT", left="late_l", right="late_r")
    result = streaming.sql(query)
    got = sorted((tuple(r.values()) for r in result.to_arrow().to_pylist()), key=repr)
    assert got == [("a", 1, "a", 10, at(0), at(0)), ("a", 2, "a", 20, at(10), at(10))]
    run = result.changelog.run  # type: ignore[union-attr]
    late = {m["operator"].split(" ")[0]: m.get("late_records_dropped") for m in run.metrics()}
    assert late["WindowJoinExec"] == 1
    assert ("a", 3, "a", 10, at(0), at(0)) in sorted_rows(batch, query)


def test_a_join_equating_only_window_start_stays_a_regular_join(
        streaming: flowsql.Session) -> None:
    query = (f"SELECT L.v, R.v AS rv FROM TABLE({window('l')}) L JOIN TABLE({window('r')}) R "
             "ON L.window_start = R.window_start AND L.k = R.k")
    plan = streaming.sql(query).explain()
    assert "StreamJoin[inner" in plan and "WindowJoin" not in plan


def test_processing_time_windows_are_rejected() -> None:
    s = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    for name in ("a", "b"):
        s.sql(f"CREATE TABLE {name} (k INT, pt AS PROCTIME()) WITH ('connector' = 'datagen', "
              "'number-of-rows' = '10')")
    query = ("SELECT x.k FROM TABLE(TUMBLE(TABLE a, DESCRIPTOR(pt), INTERVAL '1' SECOND)) x "
             "JOIN TABLE(TUMBLE(TABLE b, DESCRIPTOR(pt), INTERVAL '1' SECOND)) y "
             "ON x.window_start = y.window_start AND x.window_end = y.window_end")
    with pytest.raises(PlanError, match="a window join needs event-time windows"):
        s.sql(query)


def test_window_join_of_two_window_aggregates(streaming: flowsql.Session,
                                              batch: flowsql.Session) -> None:
    """Flink's usual shape: join per-window results; a window aggregate emits a window
    when the watermark passes its end, before forwarding that watermark, so its rows are
    never late at the join."""
    def counts(table: str) -> str:
        return (f"SELECT k, window_start, window_end, COUNT(*) AS c FROM TABLE("
                f"{window(table)}) GROUP BY k, window_start, window_end")
    query = f"""SELECT A.k, A.window_start, A.c, B.c AS rc
                FROM ({counts('l')}) A FULL JOIN ({counts('r')}) B
                ON A.window_start = B.window_start AND A.window_end = B.window_end
                   AND A.k = B.k"""
    assert "WindowJoin[full]" in streaming.sql(query).explain()
    assert sorted_rows(streaming, query) == sorted_rows(batch, query) == sorted([
        ("a", at(0), 2, 1), ("b", at(0), 1, N), (N, N, N, 1),      # r c20
        ("a", at(10), 1, 1), ("c", at(10), 1, N), (N, N, N, 1),    # r b40
        ("b", at(20), 1, N), (N, N, N, 1)], key=repr)              # r d50
