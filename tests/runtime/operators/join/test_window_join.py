"""Window joins: output checked by hand per input event (so the moment a window fires is
checked too), late rows, snapshot/restore at every point of the scenario and into two
subtasks, and the final result of re-chunked, interleaved inputs against DuckDB's join.

Both inputs are rows ``(k, window_start, window_end, value)`` of 10-second tumbling
windows; the condition is ``l.k = r.k AND l.window_start = r.window_start AND
l.window_end = r.window_end``. A window ``[s, s + 10)`` fires at watermark ``s + 9.999``.
Times below are in seconds; a row is written ``(key, window start, value)``.
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
from flowsql.planner.physical_streaming import WindowJoinExec
from flowsql.planner.schema import to_arrow_schema
from flowsql.runtime.changelog import ROW_KIND, with_row_kinds
from flowsql.runtime.events import MAX_WATERMARK
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.join.window_join import LATE_RECORDS_DROPPED, WindowJoinOperator
from flowsql.runtime.state.store import merge_snapshots
from tests.harness.operators import duck, leaf, rows

N = None
EPOCH = datetime.datetime(2024, 1, 1)
TS = pa.timestamp("ms")
SIZE = 10


def _side(value: str) -> pa.Table:
    return pa.table({"k": pa.array([], pa.int64()), "ws": pa.array([], TS),
                     "we": pa.array([], TS), value: pa.array([], pa.int64())})


def _t(seconds: float) -> datetime.datetime:
    return EPOCH + datetime.timedelta(seconds=seconds)


def _ms(seconds: float) -> int:
    return round((_t(seconds) - datetime.datetime(1970, 1, 1)).total_seconds() * 1000)


def _join(kind: str, residual: bool = False) -> WindowJoinExec:
    ln, _ = leaf(_side("a"))
    rn, _ = leaf(_side("b"))
    lk, ls, le, la = (f.ref() for f in ln.schema)
    rk, rs, re, rb = (f.ref() for f in rn.schema)
    condition = Call("lt", (la, rb), T.BOOL) if residual else None
    return WindowJoinExec(ln, rn, kind, (lk, ls, le), (rk, rs, re), (ls, le), (rs, re),
                          condition, 0.0)


def _batch(node: WindowJoinExec, input: int, data: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """Rows ``(key, window start in seconds, value)``."""
    schema = to_arrow_schema(node.inputs[input].schema)
    return pa.RecordBatch.from_arrays(
        [pa.array([r[0] for r in data], pa.int64()),
         pa.array([_t(r[1]) for r in data], TS),
         pa.array([_t(r[1] + SIZE) for r in data], TS),
         pa.array([r[2] for r in data], pa.int64())], schema=schema)


Event = tuple[str, Any]  # ("left"|"right", rows) or ("wm", seconds) or ("end", None)


def _open(node: WindowJoinExec, subtask: int = 0, parallelism: int = 1) -> WindowJoinOperator:
    operator = WindowJoinOperator(node)
    operator.open(OperatorContext("window join", subtask_index=subtask,
                                  parallelism=parallelism))
    return operator


def _feed(operator: WindowJoinOperator, node: WindowJoinExec, event: Event
          ) -> list[pa.RecordBatch]:
    what, arg = event
    if what == "wm":
        return list(operator.process_watermark(_ms(arg)))
    if what == "end":
        return list(operator.end_input(0)) + list(operator.end_input(1))
    input = 0 if what == "left" else 1
    return list(operator.process_batch(input, _batch(node, input, arg)))


def _values(node: WindowJoinExec, out: list[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    """The emitted rows as ``(a, b)`` (``(a,)`` for semi / anti) -- enough to identify
    every row of these tests -- after checking the window columns agree across sides."""
    emitted: list[tuple[Any, ...]] = []
    for batch in out:
        assert ROW_KIND not in batch.schema.names  # insert-only for every kind
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        if node.kind in ("semi", "anti"):
            emitted.extend((a,) for a in columns[3])
            continue
        for _, ls, le, a, _, rs, re, b in zip(*columns):
            assert (ls is None) == (a is None) and (rs is None) == (b is None)
            assert a is None or b is None or (ls, le) == (rs, re)
            emitted.append((a, b))
    return emitted


def _run(node: WindowJoinExec, events: list[Event], restore_at: int | None = None
         ) -> tuple[list[list[tuple[Any, ...]]], int]:
    """Per event, the rows it emitted; and the late rows counted. With ``restore_at``,
    the operator is snapshotted before that event and replaced by a restored one."""
    operator = _open(node)
    late = 0
    per_event: list[list[tuple[Any, ...]]] = []
    for i, event in enumerate(events):
        if i == restore_at:
            snapshot = operator.snapshot_state(1)
            late += operator.context.metrics[LATE_RECORDS_DROPPED]
            operator = _open(node)
            operator.restore_state(snapshot)
        per_event.append(_values(node, _feed(operator, node, event)))
    return per_event, late + operator.context.metrics[LATE_RECORDS_DROPPED]


# Values name rows: a1 is the left row with value 1.
SCENARIO: list[Event] = [
    ("left", [(1, 0, 1), (2, 0, 2), (1, 10, 3)]),
    ("right", [(1, 0, 10), (3, 0, 30), (1, 10, 40), (1, 0, 11)]),
    ("wm", 9.998),                  # window [0, 10) fires at 9.999: not yet
    ("left", [(1, 0, 4)]),          # out of order, still on time
    ("wm", 9.999),                  # fires [0, 10)
    ("left", [(1, 0, 5)]),          # late: [0, 10) fired
    ("right", [(1, 0, 12), (N, 10, 50)]),  # b12 late; b50 has a NULL key
    ("left", [(1, 20, 6)]),
    ("wm", 25),                     # fires [10, 20); [20, 30) stays
    ("end", None),                  # fires [20, 30)
]


@pytest.mark.parametrize(("kind", "expected"), [
    ("inner", [[], [], [], [], [(1, 10), (1, 11), (4, 10), (4, 11)], [], [], [], [(3, 40)],
               []]),
    ("left", [[], [], [], [], [(1, 10), (1, 11), (2, N), (4, 10), (4, 11)], [], [], [],
              [(3, 40)], [(6, N)]]),
    ("right", [[], [], [], [], [(1, 10), (1, 11), (4, 10), (4, 11), (N, 30)], [], [], [],
               [(3, 40), (N, 50)], []]),
    ("full", [[], [], [], [], [(1, 10), (1, 11), (2, N), (4, 10), (4, 11), (N, 30)], [], [],
              [], [(3, 40), (N, 50)], [(6, N)]]),
    ("semi", [[], [], [], [], [(1,), (4,)], [], [], [], [(3,)], []]),
    ("anti", [[], [], [], [], [(2,)], [], [], [], [], [(6,)]]),
])
def test_each_kind_emits_a_window_once_when_it_fires(kind, expected):
    assert _run(_join(kind), SCENARIO) == (expected, 2)


@pytest.mark.parametrize("kind", ["inner", "left", "right", "full", "semi", "anti"])
@pytest.mark.parametrize("restore_at", range(1, len(SCENARIO)))
def test_snapshot_and_restore_anywhere_changes_nothing(kind, restore_at):
    node = _join(kind)
    assert _run(node, SCENARIO, restore_at) == _run(node, SCENARIO)


def test_windows_fire_in_end_order_and_the_residual_applies():
    node = _join("full", residual=True)  # and l.a < r.b
    events: list[Event] = [
        ("right", [(1, 20, 5), (1, 10, 20), (1, 20, 30)]),
        ("left", [(1, 20, 10), (1, 10, 25), (1, 10, 15)]),
        ("wm", 40),
    ]
    # [10, 20): a25 fails 25 < 20, a15 < b20; [20, 30): a10 < b30 only, b5 stays unmatched
    assert _run(node, events)[0] == [[], [], [(25, N), (15, 20), (10, 30), (N, 5)]]


def test_a_watermark_that_fires_nothing_leaves_state_alone():
    node = _join("left")
    operator = _open(node)
    list(operator.process_batch(0, _batch(node, 0, [(1, 10, 1)])))
    before = operator.snapshot_state(1)["keyed/left"]
    assert list(operator.process_watermark(_ms(19.998))) == []
    assert operator.snapshot_state(2)["keyed/left"].equals(before)
    assert _values(node, list(operator.process_watermark(_ms(19.999)))) == [(1, N)]
    assert operator.snapshot_state(3)["keyed/left"].num_rows == 0
    assert list(operator.process_watermark(_ms(5))) == []  # time never goes back


def test_restore_into_two_subtasks_splits_rows_and_timers_by_key_group():
    node = _join("full")
    first = _open(node)
    for event in SCENARIO[:2]:
        _feed(first, node, event)
    snapshot = merge_snapshots([first.snapshot_state(1)])
    expected = _values(node, _feed(first, node, ("end", None)))
    parts = []
    for subtask in (0, 1):
        operator = _open(node, subtask, 2)
        operator.restore_state(snapshot)
        parts.append(_values(node, _feed(operator, node, ("end", None))))
    assert all(parts), "the keys must spread over both subtasks"
    assert sorted(parts[0] + parts[1], key=repr) == sorted(expected, key=repr)
    assert expected == [(1, 10), (1, 11), (2, N), (N, 30), (3, 40)]


def test_updating_input_is_rejected():
    node = _join("inner")
    operator = _open(node)
    with pytest.raises(ExecutionError, match="insert-only"):
        list(operator.process_batch(0, with_row_kinds(_batch(node, 0, [(1, 0, 1)]), 0)))


# -- re-chunking invariance against DuckDB ----------------------------------------------

SQL = {"inner": "SELECT * FROM l JOIN r ON {on}",
       "left": "SELECT * FROM l LEFT JOIN r ON {on}",
       "right": "SELECT * FROM l RIGHT JOIN r ON {on}",
       "full": "SELECT * FROM l FULL JOIN r ON {on}",
       "semi": "SELECT * FROM l WHERE EXISTS (SELECT 1 FROM r WHERE {on})",
       "anti": "SELECT * FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE {on})"}


def _random_side(rng: random.Random, n: int) -> list[tuple[Any, ...]]:
    return [(rng.choice([1, 2, 3, None]), SIZE * rng.randrange(0, 5), rng.randrange(50))
            for _ in range(n)]


@pytest.mark.parametrize("kind", list(SQL))
@pytest.mark.parametrize("seed", range(4))
def test_rechunked_final_result_matches_duckdb(kind, seed):
    """Rows arrive roughly in window order, cut and interleaved at random; after each
    batch the watermark stays just below the earliest window still to come, so no row is
    late and the streaming result must equal the batch join."""
    rng = random.Random(seed * 13 + len(kind))
    node = _join(kind, residual=True)
    sides = [_random_side(rng, 18), _random_side(rng, 15)]
    for side in sides:
        side.sort(key=lambda r: r[1] + rng.randrange(2 * SIZE))
    operator = _open(node)
    out: list[pa.RecordBatch] = []
    position = [0, 0]
    while position[0] < len(sides[0]) or position[1] < len(sides[1]):
        input = rng.choice([i for i in (0, 1) if position[i] < len(sides[i])])
        size = rng.randint(1, 4)
        chunk = sides[input][position[input]:position[input] + size]
        position[input] += size
        out.extend(operator.process_batch(input, _batch(node, input, chunk)))
        pending = [r[1] for i in (0, 1) for r in sides[i][position[i]:]]
        out.extend(operator.process_watermark(_ms(min(pending) + SIZE) - 2 if pending
                                              else MAX_WATERMARK))
    out.extend(operator.end_input(0))
    out.extend(operator.end_input(1))
    assert operator.context.metrics[LATE_RECORDS_DROPPED] == 0
    schema = to_arrow_schema(node.schema)
    result = pa.Table.from_batches([pa.RecordBatch.from_arrays(b.columns, schema=schema)
                                    for b in out], schema=schema)
    tables = [pa.Table.from_batches([_batch(node, i, sides[i])]) for i in (0, 1)]
    on = "l.k = r.k AND l.ws = r.ws AND l.we = r.we AND l.a < r.b"
    expected = duck(SQL[kind].format(on=on), l=tables[0], r=tables[1])
    assert rows(result) == rows(expected)
    assert result.num_rows > 0
