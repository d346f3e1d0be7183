"""Windowed aggregate (GROUP BY keys, window_start, window_end over rows that carry their
window): output checked by hand per input event (so the moment a window fires is checked
too), late rows, snapshot/restore at every point of the scenario and into two subtasks,
compaction of partial accumulators, and re-chunked input against DuckDB's GROUP BY.

Input rows are ``(k, window_start, window_end, v)`` of 10-second tumbling windows; the
aggregate is ``GROUP BY k, window_start, window_end`` computing COUNT(*), COUNT(v),
SUM(v), MIN(v), MAX(v), AVG(v). A window ``[s, s + 10)`` fires at watermark ``s + 9.999``.
Times below are in seconds; a row is written ``(key, window start, value)``.
"""

from __future__ import annotations

import datetime
import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, ColumnRef, Literal
from flowsql.planner.physical_streaming import WindowedAggregateExec
from flowsql.planner.schema import Field, to_arrow_schema
from flowsql.runtime.changelog import ROW_KIND, with_row_kinds
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.window import cascading_window_aggregate
from flowsql.runtime.operators.window.cascading_window_aggregate import (
    LATE_RECORDS_DROPPED,
    WindowedAggregateOperator,
)
from flowsql.runtime.registry import create_operator
from flowsql.runtime.state.store import merge_snapshots
from tests.harness.operators import duck, leaf, rows

N = None
EPOCH = datetime.datetime(2024, 1, 1)
TS = pa.timestamp("ms")
SIZE = 10
FUNCTIONS = ("count_star", "count", "sum", "min", "max", "avg")


def _t(seconds: float) -> datetime.datetime:
    return EPOCH + datetime.timedelta(seconds=seconds)


def _ms(seconds: float) -> int:
    return round((_t(seconds) - datetime.datetime(1970, 1, 1)).total_seconds() * 1000)


def _node() -> WindowedAggregateExec:
    source, _ = leaf(pa.table({"k": pa.array([], pa.int64()), "ws": pa.array([], TS),
                               "we": pa.array([], TS), "v": pa.array([], pa.int64())}))
    k, ws, we, v = (f.ref() for f in source.schema)
    aggs = tuple(AggCall(name, () if name == "count_star" else (v,),
                         T.FLOAT64 if name == "avg" else T.INT64) for name in FUNCTIONS)
    agg_fields = tuple(Field.fresh(name, a.dtype) for name, a in zip(FUNCTIONS, aggs))
    group_fields = tuple(Field.fresh(e.name, e.dtype) for e in (k, ws, we))
    return WindowedAggregateExec(source, (k, ws, we), group_fields, aggs, agg_fields,
                                 (ws, we), 0.0)


NODE = _node()


def _batch(data: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """Rows ``(key, window start in seconds, value)``."""
    return pa.RecordBatch.from_arrays(
        [pa.array([r[0] for r in data], pa.int64()),
         pa.array([_t(r[1]) for r in data], TS),
         pa.array([_t(r[1] + SIZE) for r in data], TS),
         pa.array([r[2] for r in data], pa.int64())],
        schema=to_arrow_schema(NODE.input.schema))


Event = tuple[str, Any]  # ("rows", rows) or ("wm", seconds) or ("end", None)


def _open(subtask: int = 0, parallelism: int = 1) -> WindowedAggregateOperator:
    operator = WindowedAggregateOperator(NODE)
    operator.open(OperatorContext("windowed aggregate", {"execution.batch-size": "2"},
                                  subtask_index=subtask, parallelism=parallelism))
    return operator


def _feed(operator: WindowedAggregateOperator, event: Event) -> list[pa.RecordBatch]:
    what, arg = event
    if what == "wm":
        return list(operator.process_watermark(_ms(arg)))
    if what == "end":
        return list(operator.end_input(0))
    return list(operator.process_batch(0, _batch(arg)))


def _values(out: list[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    """Emitted rows as ``(key, window start in seconds, count(*), count, sum, min, max,
    avg)``, in emission order, after checking each row's window is 10 s wide."""
    emitted = []
    for batch in out:
        assert ROW_KIND not in batch.schema.names  # insert-only
        assert batch.schema.equals(to_arrow_schema(NODE.schema))
        for row in batch.to_pylist():
            k, ws, we, *aggs = row.values()
            assert we - ws == datetime.timedelta(seconds=SIZE)
            emitted.append((k, (ws - EPOCH).total_seconds(), *aggs))
    return emitted


def _run(events: list[Event], restore_at: int | None = None
         ) -> tuple[list[list[tuple[Any, ...]]], int]:
    """Per event, the rows it emitted; and the late rows counted. With ``restore_at``,
    the operator is snapshotted before that event and replaced by a restored one."""
    operator = _open()
    late = 0
    per_event: list[list[tuple[Any, ...]]] = []
    for i, event in enumerate(events):
        if i == restore_at:
            snapshot = operator.snapshot_state(1)
            late += operator.context.metrics[LATE_RECORDS_DROPPED]
            operator = _open()
            operator.restore_state(snapshot)
        per_event.append(_values(_feed(operator, event)))
    return per_event, late + operator.context.metrics[LATE_RECORDS_DROPPED]


SCENARIO: list[Event] = [
    ("rows", [(1, 0, 1), (2, 0, 2), (1, 10, 5)]),
    ("rows", [(1, 0, 3), (1, 0, N), (N, 10, 8)]),  # back to window 0: out of order
    ("wm", 9.998),                                 # [0, 10) fires at 9.999: not yet
    ("rows", [(2, 0, 9)]),                         # still on time
    ("wm", 9.999),                                 # fires [0, 10)
    ("rows", [(1, 0, 7), (2, 10, 4)]),             # (1, 0, 7) is late
    ("wm", 15),                                    # fires nothing
    ("rows", [(1, 20, 6), (1, 10, 1), (N, 10, N)]),
    ("wm", 19.999),                                # fires [10, 20); [20, 30) stays
    ("rows", [(2, 10, 100)]),                      # late
    ("end", None),                                 # fires [20, 30)
]
EXPECTED = [
    [], [], [], [],
    # key 1: 1, 3, NULL; key 2: 2, 9
    [(1, 0, 3, 2, 4, 1, 3, 2.0), (2, 0, 2, 2, 11, 2, 9, 5.5)],
    [], [], [],
    # key 1: 5, 1; key 2: 4; NULL key: 8, NULL (NULLs sort last)
    [(1, 10, 2, 2, 6, 1, 5, 3.0), (2, 10, 1, 1, 4, 4, 4, 4.0),
     (N, 10, 2, 1, 8, 8, 8, 8.0)],
    [],
    [(1, 20, 1, 1, 6, 6, 6, 6.0)],
]


def test_each_window_is_emitted_once_when_the_watermark_reaches_its_end() -> None:
    assert _run(SCENARIO) == (EXPECTED, 2)


@pytest.mark.parametrize("restore_at", range(1, len(SCENARIO)))
def test_snapshot_and_restore_anywhere_changes_nothing(restore_at: int) -> None:
    assert _run(SCENARIO, restore_at) == (EXPECTED, 2)


def test_windows_fired_together_come_in_end_order_and_a_group_of_only_nulls_sums_null() -> None:
    events: list[Event] = [("rows", [(1, 30, 1), (1, 10, N), (2, 20, 2), (1, 20, 3)]),
                           ("wm", 100)]
    assert _run(events)[0] == [[], [
        (1, 10, 1, 0, N, N, N, N),
        (1, 20, 1, 1, 3, 3, 3, 3.0), (2, 20, 1, 1, 2, 2, 2, 2.0),
        (1, 30, 1, 1, 1, 1, 1, 1.0)]]


def test_a_watermark_that_fires_nothing_leaves_state_alone() -> None:
    operator = _open()
    _feed(operator, ("rows", [(1, 10, 1)]))
    before = operator.snapshot_state(1)["keyed/groups"]
    assert _feed(operator, ("wm", 19.998)) == []
    assert operator.snapshot_state(2)["keyed/groups"].equals(before)
    assert _values(_feed(operator, ("wm", 19.999))) == [(1, 10, 1, 1, 1, 1, 1, 1.0)]
    assert operator.snapshot_state(3)["keyed/groups"].num_rows == 0
    assert _feed(operator, ("wm", 5)) == []  # time never goes back


def test_restore_into_two_subtasks_splits_groups_and_timers_by_key_group() -> None:
    first = _open()
    for event in SCENARIO[:4]:
        _feed(first, event)
    snapshot = merge_snapshots([first.snapshot_state(1)])
    expected = _values(_feed(first, ("end", None)))
    parts = []
    for subtask in (0, 1):
        operator = _open(subtask, 2)
        operator.restore_state(snapshot)
        parts.append(_values(_feed(operator, ("end", None))))
    assert all(parts), "the keys must spread over both subtasks"
    assert sorted(parts[0] + parts[1], key=repr) == sorted(expected, key=repr)


def test_an_updating_input_is_rejected() -> None:
    operator = _open()
    with pytest.raises(ExecutionError, match="must be insert-only"):
        list(operator.process_batch(0, with_row_kinds(_batch([(1, 0, 1)]), 0)))


def test_a_filtered_sum_is_rejected_at_construction() -> None:
    # DISTINCT is computed (value sets, see test_window_aggregate_distinct); FILTER is not
    v = NODE.input.schema[3].ref()
    node = WindowedAggregateExec(NODE.input, NODE.group_exprs, NODE.group_fields,
                                 (AggCall("sum", (v,), T.INT64,
                                          filter=Literal(True, pa.bool_())),),
                                 (NODE.agg_fields[2],), NODE.window, 0.0)
    with pytest.raises(ExecutionError, match="cannot compute sum"):
        create_operator(node)


@pytest.mark.parametrize("seed", range(4))
def test_rechunked_input_with_compactions_equals_duckdb(seed: int,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Many small batches, compaction after a handful of partial rows, watermarks that
    never make a row late: the final rows are DuckDB's GROUP BY of the same rows."""
    monkeypatch.setattr(cascading_window_aggregate, "_MIN_COMPACTION", 5)
    rng = random.Random(seed)
    data = [(rng.choice([1, 2, 3, N]), rng.randrange(0, 60, SIZE),
             rng.choice([N, *range(-5, 20)])) for _ in range(300)]
    data.sort(key=lambda r: r[1] + rng.random() * 15)  # a little out of order
    operator = _open()
    out: list[pa.RecordBatch] = []
    position = 0
    while position < len(data):
        size = rng.randint(1, 12)
        chunk = data[position:position + size]
        position += size
        out.extend(_feed(operator, ("rows", chunk)))
        # only windows that no later row belongs to may fire
        later = min((r[1] for r in data[position:]), default=1000)
        out.extend(_feed(operator, ("wm", later - 0.5)))
    out.extend(_feed(operator, ("end", None)))
    assert operator.context.metrics[LATE_RECORDS_DROPPED] == 0
    table = pa.Table.from_batches(
        [pa.RecordBatch.from_arrays(b.columns, names=["k", "ws", "we", *FUNCTIONS])
         for b in out])
    source = pa.Table.from_batches([_batch(data)])
    expected = duck("SELECT k, ws, we, count(*), count(v), sum(v), min(v), max(v), avg(v) "
                    "FROM source GROUP BY k, ws, we", source=source)
    assert rows(table) == rows(expected)
    emitted = [(r["we"], r["k"]) for r in table.to_pylist()]
    assert len(set(emitted)) == len(emitted)  # each group exactly once


def _reference(events: list[Event]) -> tuple[list[tuple[Any, ...]], int]:
    """Record by record: a row is late when its window's end - 1 <= the watermark when it
    arrives; every other row joins its group. The final rows of all groups, and the late
    count."""
    watermark, late = _ms(-1), 0
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for what, arg in events:
        if what == "wm":
            watermark = max(watermark, _ms(arg))
            continue
        for k, start, v in arg:
            if _ms(start + SIZE) - 1 <= watermark:
                late += 1
            else:
                groups.setdefault((k, start), []).append(v)
    out = []
    for (k, start), values in groups.items():
        present = [v for v in values if v is not None]
        if not present:
            out.append((k, start, len(values), 0, N, N, N, N))
            continue
        out.append((k, start, len(values), len(present), sum(present), min(present),
                    max(present), sum(present) / len(present)))
    return out, late


_rows = st.lists(st.tuples(st.sampled_from([1, 2, N]), st.sampled_from([0, 10, 20, 30]),
                           st.one_of(st.none(), st.integers(-5, 5))), min_size=1, max_size=5)
_events = st.lists(st.one_of(st.tuples(st.just("rows"), _rows),
                             st.tuples(st.just("wm"), st.sampled_from([5, 9.999, 15, 19.999,
                                                                       25, 45]))),
                   max_size=14)


@settings(max_examples=80, deadline=None)
@given(_events, st.integers(0, 14))
def test_any_events_with_a_restore_anywhere_equal_the_per_record_reference(
        events: list[Event], cut: int) -> None:
    module = cascading_window_aggregate
    module._MIN_COMPACTION, saved = 2, module._MIN_COMPACTION
    try:
        per_event, late = _run([*events, ("end", None)], min(cut, len(events)) or None)
    finally:
        module._MIN_COMPACTION = saved
    expected, expected_late = _reference(events)
    got = [row for emitted in per_event for row in emitted]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert late == expected_late


def test_the_node_round_trips_through_the_plan_codec() -> None:
    from flowsql.runtime.parallel.plan_codec import dumps, loads

    decoded = loads(dumps(NODE))
    assert isinstance(decoded, WindowedAggregateExec)
    assert [c.cid for c in decoded.window if isinstance(c, ColumnRef)] == [
        c.cid for c in NODE.window if isinstance(c, ColumnRef)]
    assert decoded.schema == NODE.schema
