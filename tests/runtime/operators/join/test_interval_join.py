"""Event-time interval joins: changelogs checked by hand per input event (so the moment a
padded row appears is checked too), and the final result of re-chunked, interleaved
inputs against DuckDB's join of the same rows.

Unless said otherwise the condition is ``l.k = r.k AND r.rt BETWEEN l.lt - INTERVAL '2'
SECOND AND l.lt + INTERVAL '3' SECOND`` (lower -2000 ms, upper 3000 ms): a left row at
``lt`` expires at watermark ``lt + 3s``, a right row at ``rt`` at watermark ``rt + 2s``.
Times below are in seconds.
"""

from __future__ import annotations

import datetime
import random
from typing import Any

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Call
from flowsql.planner.physical_streaming import IntervalJoinExec
from flowsql.planner.schema import to_arrow_schema
from flowsql.runtime.changelog import ROW_KIND, with_row_kinds
from flowsql.runtime.events import MAX_WATERMARK
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.join.interval_join import IntervalJoinOperator
from tests.harness.operators import duck, leaf, rows

N = None
EPOCH = datetime.datetime(2024, 1, 1)
TS = pa.timestamp("ms")
LEFT = pa.table({"k": pa.array([], pa.int64()), "lt": pa.array([], TS),
                 "a": pa.array([], pa.int64())})
RIGHT = pa.table({"k": pa.array([], pa.int64()), "rt": pa.array([], TS),
                  "b": pa.array([], pa.int64())})


def _t(seconds: float) -> datetime.datetime:
    return EPOCH + datetime.timedelta(seconds=seconds)


def _ms(seconds: float) -> int:
    return int((_t(seconds) - datetime.datetime(1970, 1, 1)).total_seconds() * 1000)


def _join(kind: str, lower_ms: int = -2000, upper_ms: int = 3000,
          residual: bool = False) -> IntervalJoinExec:
    ln, _ = leaf(LEFT)
    rn, _ = leaf(RIGHT)
    condition = (Call("lt", (ln.schema[2].ref(), rn.schema[2].ref()), T.BOOL)
                 if residual else None)
    return IntervalJoinExec(ln, rn, kind, (ln.schema[0].ref(),), (rn.schema[0].ref(),),
                            ln.schema[1].ref(), rn.schema[1].ref(), lower_ms, upper_ms,
                            condition, 0.0)


def _batch(node: IntervalJoinExec, input: int, data: list[tuple[Any, ...]]
           ) -> pa.RecordBatch:
    """Rows ``(key, time in seconds, value)``."""
    schema = to_arrow_schema(node.inputs[input].schema)
    return pa.RecordBatch.from_arrays(
        [pa.array([r[0] for r in data], pa.int64()), pa.array([_t(r[1]) for r in data], TS),
         pa.array([r[2] for r in data], pa.int64())], schema=schema)


Event = tuple[str, Any]  # ("left"|"right", rows) or ("wm", seconds) or ("end", None)


def _run(node: IntervalJoinExec, events: list[Event], values_are_times: bool = True
         ) -> list[list[tuple[Any, ...]]]:
    """Per event, the rows it emitted as ``(a, b)`` (the values; NULL where padded) --
    enough to identify every row of these tests -- after checking the time columns agree
    with them."""
    operator = IntervalJoinOperator(node)
    operator.open(OperatorContext("interval join"))
    per_event: list[list[tuple[Any, ...]]] = []
    for what, arg in events:
        if what == "wm":
            out = list(operator.process_watermark(_ms(arg)))
        elif what == "end":
            out = list(operator.end_input(0)) + list(operator.end_input(1))
        else:
            input = 0 if what == "left" else 1
            out = list(operator.process_batch(input, _batch(node, input, arg)))
        emitted = []
        for batch in out:
            assert ROW_KIND not in batch.schema.names  # insert-only for every kind
            columns = [batch.column(i).to_pylist() for i in range(6)]
            for _, lt, a, _, rt, b in zip(*columns):
                assert (lt is None) == (a is None) and (rt is None) == (b is None)
                if values_are_times:
                    assert a is None or lt == _t(a)
                    assert b is None or rt == _t(b)
                emitted.append((a, b))
        per_event.append(emitted)
    return per_event


# Values equal times: a10 is the left row at 10 s with a = 10.
SCENARIO: list[Event] = [
    ("left", [(1, 10, 10), (2, 12, 12), (1, 5, 5)]),
    ("right", [(1, 11, 11), (1, 4, 4), (2, 20, 20)]),  # b11~a10, b4~a5, b20 has no partner
    ("wm", 8),      # expires a5 (at 8) and b4 (at 6)
    ("left", [(1, 6, 6), (1, 3, 3)]),   # a6 buffered (expires at 9); a3 already expired
    ("wm", 9),      # expires a6, which never matched
    ("right", [(1, 9, 9)]),             # b9~a10
    ("wm", 20),     # expires a10 (13), a12 (15), b9 (11), b11 (13); b20 stays (22)
    ("right", [(1, 15, 15), (N, 30, 30)]),  # b15 already expired, b30 has a NULL key
    ("end", None),
]


def test_inner_interval_join_with_out_of_order_rows():
    assert _run(_join("inner"), SCENARIO) == [
        [], [(10, 11), (5, 4)], [], [], [], [(10, 9)], [], [], []]


def test_left_interval_join_pads_when_rows_expire():
    assert _run(_join("left"), SCENARIO) == [
        [], [(10, 11), (5, 4)], [],
        [(3, N)],       # a3 cannot be matched any more: padded at once
        [(6, N)],       # a6 expired unmatched
        [(10, 9)],
        [(12, N)],      # a12 expired unmatched; a10 had partners
        [], []]


def test_right_interval_join():
    assert _run(_join("right"), SCENARIO) == [
        [], [(10, 11), (5, 4)], [], [], [], [(10, 9)], [],
        [(N, 15), (N, 30)],  # neither can be matched any more
        [(N, 20)]]           # b20 expires at the end of input


def test_full_interval_join():
    assert _run(_join("full"), SCENARIO) == [
        [], [(10, 11), (5, 4)], [], [(3, N)], [(6, N)], [(10, 9)], [(12, N)],
        [(N, 15), (N, 30)], [(N, 20)]]


def test_expired_rows_are_padded_in_expiry_order():
    events: list[Event] = [
        ("left", [(1, 10, 10)]),    # expires at 13
        ("right", [(2, 9, 9)]),     # expires at 11
        ("left", [(3, 7, 7)]),      # expires at 10
        ("wm", 12),
        ("wm", 13),
    ]
    assert _run(_join("full"), events) == [[], [], [], [(7, N), (N, 9)], [(10, N)]]


def test_bounds_are_inclusive_and_residual_applies():
    node = _join("left", lower_ms=0, upper_ms=2000, residual=True)  # and l.a < r.b
    events: list[Event] = [
        ("left", [(1, 10, 10), (1, 11, 30), (1, 20, 1)]),
        ("right", [(1, 10, 10), (1, 12, 12), (1, 13, 13), (1, 9, 90),
                   (1, 19.999, 2), (1, 20, 3), (1, 22, 4), (1, 22.001, 5)]),
        ("wm", 13),
        ("left", [(4, 11, 77)]),  # expires at 13 = the watermark: cannot match any more
        ("wm", 14),
    ]
    # rt in [lt, lt + 2 s]: b12 is at the upper bound of a10 (joined); b10 is at the lower
    # bound of a10 but fails 10 < 10; b12 and b13 are in a30's interval but fail 30 < b;
    # b90 (at 9 s) is below both. For a1 at 20 s exactly b3 (20 s) and b4 (22 s) are
    # inside, b2 and b5 one millisecond outside. At watermark 13 a10 (expires at 12)
    # had a partner, a30 (expires at 13) had none; a1 stays.
    assert _run(node, events, values_are_times=False) == [
        [], [(10, 12), (1, 3), (1, 4)], [(30, N)], [(77, N)], []]


def test_updating_input_is_rejected():
    node = _join("inner")
    operator = IntervalJoinOperator(node)
    operator.open(OperatorContext("interval join"))
    with pytest.raises(ExecutionError, match="insert-only"):
        list(operator.process_batch(0, with_row_kinds(_batch(node, 0, [(1, 1, 1)]), 0)))


def test_snapshot_restore_keeps_buffers_timers_and_watermark():
    node = _join("left")
    first = IntervalJoinOperator(node)
    first.open(OperatorContext("interval join"))
    list(first.process_batch(0, _batch(node, 0, [(1, 10, 10), (1, 20, 20)])))
    list(first.process_watermark(_ms(5)))
    snapshot = first.snapshot_state(1)
    second = IntervalJoinOperator(node)
    second.open(OperatorContext("interval join"))
    second.restore_state(snapshot)
    joined = list(second.process_batch(1, _batch(node, 1, [(1, 11, 11)])))
    assert [b.column(5).to_pylist() for b in joined] == [[11]]
    padded = list(second.process_watermark(_ms(23)))
    assert [b.column(2).to_pylist() for b in padded] == [[20]]
    assert list(second.process_watermark(_ms(5))) == []


# -- re-chunking invariance against DuckDB ----------------------------------------------

SQL_KIND = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN"}


def _random_side(rng: random.Random, n: int) -> list[tuple[Any, ...]]:
    return [(rng.choice([1, 2, 3, None]), rng.randrange(0, 40), rng.randrange(50))
            for _ in range(n)]


@pytest.mark.parametrize("kind", list(SQL_KIND))
@pytest.mark.parametrize("seed", range(4))
def test_rechunked_final_result_matches_duckdb(kind, seed):
    """Rows arrive roughly in time order, cut and interleaved at random; after each batch
    the watermark is the smallest time still to come minus 1 ms, so no row is late and
    the streaming result must equal the batch join."""
    rng = random.Random(seed * 11 + len(kind))
    node = _join(kind, residual=True)
    sides = [_random_side(rng, 16), _random_side(rng, 14)]
    for side in sides:  # roughly ordered: sorted by time plus a little disorder
        side.sort(key=lambda r: r[1] + rng.randrange(4))
    operator = IntervalJoinOperator(node)
    operator.open(OperatorContext("interval join"))
    out: list[pa.RecordBatch] = []
    position = [0, 0]
    while position[0] < len(sides[0]) or position[1] < len(sides[1]):
        input = rng.choice([i for i in (0, 1) if position[i] < len(sides[i])])
        size = rng.randint(1, 4)
        chunk = sides[input][position[input]:position[input] + size]
        position[input] += size
        out.extend(operator.process_batch(input, _batch(node, input, chunk)))
        pending = [r[1] for i in (0, 1) for r in sides[i][position[i]:]]
        out.extend(operator.process_watermark(_ms(min(pending)) - 1 if pending
                                              else MAX_WATERMARK))
    out.extend(operator.end_input(0))
    out.extend(operator.end_input(1))
    schema = to_arrow_schema(node.schema)
    result = pa.Table.from_batches([pa.RecordBatch.from_arrays(b.columns, schema=schema)
                                    for b in out], schema=schema)
    tables = [_batch(node, i, sides[i]) for i in (0, 1)]
    expected = duck(
        f"SELECT * FROM l {SQL_KIND[kind]} r ON l.k = r.k AND l.a < r.b AND "
        "r.rt BETWEEN l.lt - INTERVAL 2 SECOND AND l.lt + INTERVAL 3 SECOND",
        l=pa.Table.from_batches([tables[0]]), r=pa.Table.from_batches([tables[1]]))
    assert rows(result) == rows(expected)
    assert result.num_rows > 0


# -- end to end: SQL in streaming mode --------------------------------------------------

def test_sql_left_interval_join_in_streaming_mode(tmp_path):
    import flowsql

    (tmp_path / "l.csv").write_text("1,2024-01-01 00:00:10,10\n2,2024-01-01 00:00:12,12\n"
                                    ",2024-01-01 00:00:13,13\n4,2024-01-01 00:00:14,14\n")
    (tmp_path / "r.csv").write_text("1,2024-01-01 00:00:11,11\n1,2024-01-01 00:00:12,5\n"
                                    "1,2024-01-01 00:00:13,6\n4,2024-01-01 00:00:15,15\n")
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    for name, column in (("l", "a"), ("r", "b")):
        session.sql(f"CREATE TABLE {name} (k BIGINT, ts TIMESTAMP(3), {column} BIGINT, "
                    "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ("
                    f"'connector' = 'filesystem', 'path' = '{tmp_path / (name + '.csv')}', "
                    "'format' = 'csv')")
    session.sql("SET 'pipeline.auto-watermark-interval' = '0'")
    query = ("SELECT l.a, r.b FROM l LEFT JOIN r ON l.k = r.k AND r.ts BETWEEN "
             "l.ts - INTERVAL '1' SECOND AND l.ts + INTERVAL '2' SECOND")
    assert "IntervalJoin[left]" in session.sql(query).explain()
    batches = list(session.sql(query).stream())
    assert {op for b in batches for op in b.column(0).to_pylist()} == {"+I"}
    # b6 at 13 s is 3 s after a10: outside [9 s, 12 s]
    result = pa.Table.from_batches(batches).drop_columns(["op"])
    assert rows(result) == [(10, 5), (10, 11), (12, N), (13, N), (14, 15)]
