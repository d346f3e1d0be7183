"""Window aggregates with hand-checked expectations (Flink's window TVF semantics).

Unless said otherwise the input is the stream below, with WATERMARK ts - 2 at
auto-watermark-interval 0 (a watermark after every record), so the watermark when each
record arrives is the running max of the earlier timestamps minus 2:

    record   a@1  b@3  a@12  a@2  b@7  a@25  b@4  a@16
    arrival  -inf -1    1    10   10   10    23   23
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError, PlanError
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.window.window_aggregate import (
    LATE_RECORDS_DROPPED,
    WindowAggregateOperator,
)
from flowsql.runtime.operators.window.window_specs import (
    AggregateSpec,
    WindowAggregateSpec,
    WindowSpec,
)
from tests.harness.windows import reference, run

EVENTS = [("a", 1, 1), ("b", 3, 3), ("a", 12, 12), ("a", 2, 2), ("b", 7, 7), ("a", 25, 25),
          ("b", 4, 4), ("a", 16, 16)]


def _sorted(rows):
    return sorted(rows, key=lambda r: tuple((v is None, v) for v in r))


def test_tumble_drops_records_whose_window_fired():
    # a@2, b@7 arrive at watermark 10 >= 9 = end - 1 of [0, 10); b@4 and a@16 at 23
    rows, late = run(WindowSpec.tumble(10), EVENTS, delay=2)
    assert rows == [("a", 0, 10, 1, 1, 1), ("b", 0, 10, 1, 3, 3), ("a", 10, 20, 1, 12, 12),
                    ("a", 20, 30, 1, 25, 25)]
    assert late == 4


def test_tumble_with_offset():
    events = [("a", 2, 1), ("a", 3, 2), ("a", 12, 3), ("a", 13, 4)]
    rows, late = run(WindowSpec.tumble(10, offset=3), events, delay=100)
    assert rows == [("a", -7, 3, 1, 1, 1), ("a", 3, 13, 2, 5, 3), ("a", 13, 23, 1, 4, 4)]
    assert late == 0


def test_hop_late_record_still_joins_its_later_windows():
    # b@7: [0,10) has fired at watermark 10, [5,15) has not -> joins only [5,15);
    # a@16: [10,20) fired at 23, [15,25) open; a@2 and b@4 are late for all windows
    rows, late = run(WindowSpec.hop(5, 10), EVENTS, delay=2)
    assert rows == [
        ("a", -5, 5, 1, 1, 1), ("b", -5, 5, 1, 3, 3), ("a", 0, 10, 1, 1, 1),
        ("b", 0, 10, 1, 3, 3), ("a", 5, 15, 1, 12, 12), ("b", 5, 15, 1, 7, 7),
        ("a", 10, 20, 1, 12, 12), ("a", 15, 25, 1, 16, 16), ("a", 20, 30, 1, 25, 25),
        ("a", 25, 35, 1, 25, 25)]
    assert late == 2


def test_cumulate_windows_share_a_start_and_fire_per_step():
    # a@25 belongs to [20,30) only ([20,25) excludes 25); b@7 belongs to [0,10) only
    rows, late = run(WindowSpec.cumulate(5, 10), EVENTS, delay=2)
    assert rows == [("a", 0, 5, 1, 1, 1), ("b", 0, 5, 1, 3, 3), ("a", 0, 10, 1, 1, 1),
                    ("b", 0, 10, 1, 3, 3), ("a", 10, 15, 1, 12, 12),
                    ("a", 10, 20, 1, 12, 12), ("a", 20, 30, 1, 25, 25)]
    assert late == 4


def test_cumulate_late_record_joins_the_longer_windows():
    # watermark 6 when a@3 arrives: [0,5) fired, [0,10) and [0,15) still open
    events = [("a", 1, 1), ("a", 8, 8), ("a", 3, 3)]
    rows, late = run(WindowSpec.cumulate(5, 15), events, delay=2)
    assert rows == [("a", 0, 5, 1, 1, 1), ("a", 0, 10, 3, 12, 8), ("a", 0, 15, 3, 12, 8)]
    assert late == 0


def test_session_fires_and_drops_like_flink():
    # gap 5: a[1,6) and b[3,8) fire at watermark 10 (before a@2); a@2 ([2,7)) is late and
    # touches no open session; b@7 opens a new session [7,12); a@16's [16,21) is late
    # and does not reach a[25,30)
    rows, late = run(WindowSpec.session(5), EVENTS, delay=2)
    assert rows == [("a", 1, 6, 1, 1, 1), ("b", 3, 8, 1, 3, 3), ("b", 7, 12, 1, 7, 7),
                    ("a", 12, 17, 1, 12, 12), ("a", 25, 30, 1, 25, 25)]
    assert late == 3


def test_sessions_merge_when_they_touch_or_overlap_and_fire_at_end_of_input():
    # gap 10: a[0,10) and a[15,25) are bridged by a[10,20), which touches the first at 10;
    # a[35,45) stays apart; nothing fires before end of input (watermark ts - 100)
    events = [("a", 0, 1), ("a", 15, 2), ("b", 5, 3), ("a", 35, 4), ("a", 10, 5)]
    rows, late = run(WindowSpec.session(10), events, delay=100, sizes=[2, 3])
    assert rows == [("b", 5, 15, 1, 3, 3), ("a", 0, 25, 3, 8, 5), ("a", 35, 45, 1, 4, 4)]
    assert late == 0


def test_session_record_late_alone_survives_by_extending_an_open_session():
    # gap 10, delay 0: a[0,10) fires at watermark 20; a@12 -> [12,30) with a@20; a@5 at
    # watermark 20 is late alone ([5,15)) but merges into [5,30), which is open; so does
    # a@1; b@3 touches nothing open and is dropped
    events = [("a", 0, 0), ("a", 20, 20), ("a", 12, 12), ("a", 5, 5), ("a", 1, 1),
              ("b", 3, 3)]
    rows, late = run(WindowSpec.session(10), events, delay=0, sizes=[3, 3])
    assert rows == [("a", 0, 10, 1, 0, 0), ("a", 1, 30, 4, 38, 20)]
    assert late == 1


@pytest.mark.parametrize("window", [WindowSpec.tumble(10), WindowSpec.hop(5, 10),
                                    WindowSpec.cumulate(5, 10), WindowSpec.session(5)])
def test_batch_of_one_record_each_matches_the_reference_model(window):
    actual, late = run(window, EVENTS, delay=2, sizes=[1] * len(EVENTS))
    expected, expected_late = reference(window, EVENTS, delay=2)
    assert _sorted(actual) == _sorted(expected)
    assert late == expected_late


def test_aggregates_over_nulls_and_timestamps():
    schema = pa.schema([("k", pa.int32()), ("ts", pa.timestamp("us", "UTC")),
                        ("v", pa.float64()), ("s", pa.string())])
    spec = WindowAggregateSpec(schema, 1, WindowSpec.tumble(1000), (0,), (
        AggregateSpec("count_star", None, "n"), AggregateSpec("count", 2, "nv"),
        AggregateSpec("sum", 2, "sv"), AggregateSpec("avg", 2, "av"),
        AggregateSpec("min", 3, "lo"), AggregateSpec("max", 3, "hi")))
    operator = WindowAggregateOperator.from_spec(spec)
    operator.open(OperatorContext("w"))
    batch = pa.record_batch([
        pa.array([1, 1, None, None, 1], pa.int32()),
        pa.array([1_500, 999_999, 2_000_000, 2_100_000, 1_000_000], pa.timestamp("us", "UTC")),
        pa.array([None, 2.0, None, None, 4.0]), pa.array(["x", "b", None, "q", "c"])],
        schema=schema)
    out = list(operator.process_batch(0, batch)) + list(operator.end_input(0))
    table = pa.Table.from_batches(out)
    assert table.schema.field("window_start").type == pa.timestamp("ms", "UTC")
    got = [(r["k"], r["window_start"].timestamp(), r["n"], r["nv"], r["sv"], r["av"], r["lo"],
            r["hi"]) for r in table.to_pylist()]
    assert got == [(1, 0.0, 2, 1, 2.0, 2.0, "b", "x"), (1, 1.0, 1, 1, 4.0, 4.0, "c", "c"),
                   (None, 2.0, 2, 0, None, None, "q", "q")]


def test_global_window_without_group_keys():
    schema = pa.schema([("ts", pa.int64()), ("v", pa.int64())])
    spec = WindowAggregateSpec(schema, 0, WindowSpec.tumble(10), (),
                               (AggregateSpec("sum", 1, "s"),))
    operator = WindowAggregateOperator.from_spec(spec)
    operator.open(OperatorContext("w"))
    batch = pa.record_batch([pa.array([1, 5, 11]), pa.array([1, 2, 3])], schema=schema)
    out = list(operator.process_batch(0, batch)) + list(operator.process_watermark(9))
    assert pa.Table.from_batches(out).to_pylist() == [
        {"window_start": 0, "window_end": 10, "s": 3}]
    assert pa.Table.from_batches(list(operator.end_input(0))).to_pylist() == [
        {"window_start": 10, "window_end": 20, "s": 3}]


def test_watermark_events_without_row_watermarks_decide_lateness():
    schema = pa.schema([("k", pa.string()), ("ts", pa.int64())])
    spec = WindowAggregateSpec(schema, 1, WindowSpec.tumble(10), (0,),
                               (AggregateSpec("count_star", None, "n"),))
    operator = WindowAggregateOperator.from_spec(spec)
    context = OperatorContext("w")
    operator.open(context)
    fired = list(operator.process_batch(0, pa.record_batch(
        [pa.array(["a", "a"]), pa.array([3, 15])], schema=schema)))
    fired += list(operator.process_watermark(9))
    fired += list(operator.process_batch(0, pa.record_batch(
        [pa.array(["a", "a"]), pa.array([4, 12])], schema=schema)))
    fired += list(operator.end_input(0))
    assert pa.Table.from_batches(fired).to_pylist() == [
        {"k": "a", "window_start": 0, "window_end": 10, "n": 1},
        {"k": "a", "window_start": 10, "window_end": 20, "n": 2}]
    assert context.metrics[LATE_RECORDS_DROPPED] == 1


def test_invalid_windows_and_null_rowtime_are_reported():
    with pytest.raises(PlanError, match="divide"):
        WindowSpec.hop(3, 10)
    with pytest.raises(PlanError, match="gap"):
        WindowSpec.session(0)
    schema = pa.schema([("ts", pa.int64())])
    operator = WindowAggregateOperator.from_spec(WindowAggregateSpec(
        schema, 0, WindowSpec.tumble(5), (), (AggregateSpec("count_star", None, "n"),)))
    operator.open(OperatorContext("w"))
    with pytest.raises(ExecutionError, match="NULL"):
        list(operator.process_batch(0, pa.record_batch([pa.array([1, None])], schema=schema)))
