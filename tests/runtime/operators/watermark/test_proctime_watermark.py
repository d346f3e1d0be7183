"""The processing-time watermark operator, on a fake clock: batches pass unchanged, the
watermark is the clock minus one millisecond after each batch and while idle, only
advances are emitted, upstream watermarks stop here. Then the planned operator pair
(ProctimeWatermark -> WindowAggregate) of a SQL TUMBLE over a PROCTIME() column: exact
rows, and the exact clock reading at which each window fires."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import pyarrow as pa
import pytest

import flowsql
from flowsql.planner.physical import WindowAggregateExec
from flowsql.planner.physical_streaming import ProctimeWatermarkExec
from flowsql.runtime.events import Watermark
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.watermark.proctime_watermark import ProctimeWatermarkOperator
from flowsql.runtime.operators.window.window_aggregate import WindowAggregateOperator
from flowsql.runtime.registry import create_operator
from flowsql.session.execute.planning import plan_statement
from flowsql.sql.bind_query import PROCTIME_TYPE
from flowsql.sql.statement_parser import parse_one
from tests.harness.operators import leaf


class FakeClock:
    """Epoch milliseconds, set by the test."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _elements(out: Iterable[object]) -> list[object]:
    """Watermarks as ints, batches as their first column's values."""
    return [e.timestamp if isinstance(e, Watermark) else e.column(0).to_pylist()  # type: ignore[attr-defined]
            for e in out]


def _operator(clock: FakeClock) -> tuple[ProctimeWatermarkOperator, list[pa.RecordBatch]]:
    node, batches = leaf(pa.table({"v": [1, 2, 3, 4, 5]}), chunk=2)
    operator = ProctimeWatermarkOperator(
        ProctimeWatermarkExec(node, node.fields[0].ref(), 5.0), clock)
    operator.open(OperatorContext("proctime"))
    return operator, batches


def test_watermark_is_the_clock_minus_one_after_each_batch() -> None:
    clock = FakeClock(10_000)
    operator, batches = _operator(clock)
    assert _elements(operator.process_batch(0, batches[0])) == [[1, 2], 9_999]
    clock.now = 10_250
    assert _elements(operator.process_batch(0, batches[1])) == [[3, 4], 10_249]


def test_only_advances_are_emitted() -> None:
    clock = FakeClock(10_000)
    operator, batches = _operator(clock)
    assert _elements(operator.process_batch(0, batches[0])) == [[1, 2], 9_999]
    # same clock reading: the batch passes, no watermark
    assert _elements(operator.process_batch(0, batches[1])) == [[3, 4]]
    clock.now = 9_000  # the wall clock stepped back: nothing goes backwards
    assert _elements(operator.process_batch(0, batches[2])) == [[5]]
    assert list(operator.on_idle()) == []


def test_idle_emits_the_clock_when_it_moved() -> None:
    clock = FakeClock(10_000)
    operator, _ = _operator(clock)
    assert _elements(operator.on_idle()) == [9_999]
    assert list(operator.on_idle()) == []
    clock.now = 10_001
    assert _elements(operator.on_idle()) == [10_000]


def test_upstream_watermarks_stop_here() -> None:
    operator, _ = _operator(FakeClock(10_000))
    assert ProctimeWatermarkOperator.forwards_watermarks is False
    assert list(operator.process_watermark(50_000)) == []
    assert list(operator.end_input(0)) == []


def test_registry_builds_it_with_the_wall_clock() -> None:
    node, _ = leaf(pa.table({"v": [1]}))
    operator = create_operator(ProctimeWatermarkExec(node, node.fields[0].ref(), 1.0))
    assert isinstance(operator, ProctimeWatermarkOperator)
    operator.open(OperatorContext("proctime"))
    before = dt.datetime.now(dt.UTC).timestamp() * 1000
    (mark,) = operator.on_idle()
    assert isinstance(mark, Watermark)
    assert before - 1_000 <= mark.timestamp <= before + 60_000


# -- the planned pair: ProctimeWatermark under a window aggregate ---------------------------

T0 = 1_700_000_004_000  # epoch ms, a multiple of every window size and step below (6 s)


def _planned_pair(window: str) -> tuple[WindowAggregateExec, ProctimeWatermarkExec]:
    session = flowsql.connect()
    session.sql("CREATE TABLE t (k STRING, v INT, pt AS PROCTIME()) "
                "WITH ('connector' = 'datagen', 'number-of-rows' = '10')")
    session.sql("SET 'execution.runtime-mode' = 'streaming'")
    query = (f"SELECT k, window_start, window_end, COUNT(*) AS c, SUM(v) AS s "
             f"FROM TABLE({window}) GROUP BY k, window_start, window_end")
    _, _, physical, _ = plan_statement(session, parse_one(query))  # type: ignore[arg-type]
    node = physical
    while not isinstance(node, WindowAggregateExec):
        node = node.inputs[0]
    assert isinstance(node.input, ProctimeWatermarkExec)
    return node, node.input


def _batch(node: ProctimeWatermarkExec, rows: list[tuple[str, int]], at: int) -> pa.RecordBatch:
    """Rows read at clock reading ``at``: their pt is ``at``, as PROCTIME() gives."""
    schema = pa.schema([pa.field(f.name, f.dtype) for f in node.schema])
    assert schema.names == ["k", "v", "pt"]
    return pa.RecordBatch.from_pydict(
        {"k": [r[0] for r in rows], "v": pa.array([r[1] for r in rows], pa.int32()),
         "pt": pa.array([at] * len(rows), pa.int64()).cast(PROCTIME_TYPE)}, schema=schema)


class Pair:
    """ProctimeWatermark -> WindowAggregate, wired as the streaming runner wires them."""

    def __init__(self, window: str, clock: FakeClock) -> None:
        self.aggregate_node, self.clock_node = _planned_pair(window)
        self.clock = ProctimeWatermarkOperator(self.clock_node, clock)
        self.aggregate = WindowAggregateOperator(self.aggregate_node)
        self.clock.open(OperatorContext("proctime"))
        self.aggregate.open(OperatorContext("window", metrics={"late_records_dropped": 0}))

    def _route(self, elements: Iterable[object]) -> list[tuple[object, ...]]:
        out: list[pa.RecordBatch] = []
        for element in elements:
            if isinstance(element, Watermark):
                out.extend(self.aggregate.process_watermark(element.timestamp))
            else:
                out.extend(self.aggregate.process_batch(0, element))  # type: ignore[arg-type]
        return [_row(r) for b in out for r in b.to_pylist()]

    def read(self, rows: list[tuple[str, int]], at: int) -> list[tuple[object, ...]]:
        return self._route(self.clock.process_batch(0, _batch(self.clock_node, rows, at)))

    def idle(self) -> list[tuple[object, ...]]:
        return self._route(self.clock.on_idle())

    def end(self) -> list[tuple[object, ...]]:
        """End of input: the runner sends +infinity, then ends the aggregate's input."""
        out = self._route([Watermark(2**63 - 1)])
        return out + [_row(r) for b in self.aggregate.end_input(0) for r in b.to_pylist()]


def _row(row: dict[str, object]) -> tuple[object, ...]:
    """(k, start ms - T0, end ms - T0, count, sum): the aggregate's output in plan order."""
    k, start, end, count, total = row.values()
    assert isinstance(start, dt.datetime) and isinstance(end, dt.datetime)
    return (k, _ms(start) - T0, _ms(end) - T0, count, total)


def _ms(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return round(value.timestamp() * 1000)


TUMBLE = "TUMBLE(TABLE t, DESCRIPTOR(pt), INTERVAL '1' SECOND)"


def test_tumble_fires_when_the_clock_passes_window_end() -> None:
    clock = FakeClock(T0 + 100)
    pair = Pair(TUMBLE, clock)
    assert pair.read([("a", 1), ("b", 2)], at=T0 + 100) == []
    clock.now = T0 + 999
    assert pair.read([("a", 3)], at=T0 + 999) == []  # window [0, 1000) still open
    assert pair.idle() == []
    clock.now = T0 + 1_000  # watermark 999 = window_end - 1: the window fires
    assert sorted(pair.idle()) == [("a", 0, 1_000, 2, 4), ("b", 0, 1_000, 1, 2)]
    assert pair.idle() == []
    # a row read now belongs to the next window and is not late
    assert pair.read([("a", 5)], at=T0 + 1_000) == []
    clock.now = T0 + 2_500
    assert pair.read([("b", 6)], at=T0 + 2_500) == [("a", 1_000, 2_000, 1, 5)]
    assert pair.end() == [("b", 2_000, 3_000, 1, 6)]
    assert pair.aggregate.context.metrics["late_records_dropped"] == 0


def test_a_batch_fires_the_windows_it_closes_after_joining_its_own() -> None:
    clock = FakeClock(T0 + 500)
    pair = Pair(TUMBLE, clock)
    assert pair.read([("a", 1)], at=T0 + 500) == []
    # the clock jumped past the window while no idle turn came: the next batch is read at
    # 3 200, joins [3000, 4000), and the watermark after it fires [0, 1000)
    clock.now = T0 + 3_200
    assert pair.read([("a", 2)], at=T0 + 3_200) == [("a", 0, 1_000, 1, 1)]
    assert pair.end() == [("a", 3_000, 4_000, 1, 2)]


def test_hop_fires_each_window_at_its_end() -> None:
    clock = FakeClock(T0 + 1_200)
    pair = Pair("HOP(TABLE t, DESCRIPTOR(pt), INTERVAL '1' SECOND, INTERVAL '2' SECOND)",
                clock)
    # read at 1 200: windows [0, 2000) and [1000, 3000)
    assert pair.read([("a", 1)], at=T0 + 1_200) == []
    clock.now = T0 + 1_999
    assert pair.idle() == []
    clock.now = T0 + 2_000
    assert pair.idle() == [("a", 0, 2_000, 1, 1)]
    clock.now = T0 + 2_100
    assert pair.read([("a", 10)], at=T0 + 2_100) == []  # [1000, 3000) and [2000, 4000)
    clock.now = T0 + 3_000
    assert pair.idle() == [("a", 1_000, 3_000, 2, 11)]
    assert pair.end() == [("a", 2_000, 4_000, 1, 10)]


def test_cumulate_fires_each_step() -> None:
    clock = FakeClock(T0 + 300)
    pair = Pair("CUMULATE(TABLE t, DESCRIPTOR(pt), INTERVAL '1' SECOND, "
                "INTERVAL '3' SECOND)", clock)
    assert pair.read([("a", 1)], at=T0 + 300) == []
    clock.now = T0 + 1_000
    assert pair.idle() == [("a", 0, 1_000, 1, 1)]
    assert pair.read([("a", 2)], at=T0 + 1_000) == []
    clock.now = T0 + 2_000
    assert pair.idle() == [("a", 0, 2_000, 2, 3)]
    clock.now = T0 + 3_000
    assert pair.idle() == [("a", 0, 3_000, 2, 3)]
    assert pair.end() == []


@pytest.mark.parametrize("rows_at", [[100, 900], [0, 999]])
def test_end_of_input_fires_every_open_window(rows_at: list[int]) -> None:
    clock = FakeClock(T0 + rows_at[0])
    pair = Pair(TUMBLE, clock)
    for i, at in enumerate(rows_at):
        clock.now = T0 + at
        assert pair.read([("a", i + 1)], at=T0 + at) == []
    assert pair.end() == [("a", 0, 1_000, 2, 3)]
