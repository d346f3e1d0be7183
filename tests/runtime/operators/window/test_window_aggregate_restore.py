"""``restore(snapshot(s))`` behaves as ``s`` for the window aggregate of a planned query:
run part of an input, snapshot, restore into a fresh operator, run the rest, and the rows
equal an uninterrupted run's, whatever the cut, for TUMBLE, HOP, CUMULATE and SESSION,
with DISTINCT aggregates.

The operator is built from the ``WindowAggregateExec`` that SQL planning produces and is
driven as the streaming runner drives it: behind the plan's watermark assigner (which,
like Flink's source watermarks, is not saved and restarts with the job) or, with the
node's own ``watermark_delay_ms``, generating the watermarks itself. The input is the
late-row input of the window SQL tests, so the state at a cut holds open windows, fired
ones and records that are late only after the restore.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from flowsql.planner.physical import WindowAggregateExec
from flowsql.planner.physical_streaming import WatermarkAssignerExec
from flowsql.planner.schema import Schema
from flowsql.runtime.events import Watermark
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.watermark.watermark_assigner import WatermarkAssignerOperator
from flowsql.runtime.operators.window.window_aggregate import (
    LATE_RECORDS_DROPPED,
    WindowAggregateOperator,
)
from flowsql.session.execute.planning import plan_statement
from flowsql.sql.statement_parser import parse_one
from tests.harness.window_sql_events import EPOCH, LATE, event_session, write_csv_files

WINDOWS = {
    "tumble": "TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)",
    "hop": "HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
    "cumulate": "CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
    "session": "SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '3' SECOND)",
}
#: keyed by k for every window (SESSION requires its PARTITION BY keys)
KEYED = ("SELECT k, window_start, window_end, COUNT(*) AS c, COUNT(DISTINCT v) AS dv, "
         "SUM(DISTINCT v) AS ds, SUM(v) AS s, MAX(v) AS m FROM TABLE({window}) "
         "GROUP BY k, window_start, window_end")
#: one group per window, the keys counted DISTINCT
GLOBAL = ("SELECT window_start, window_end, COUNT(DISTINCT k) AS keys, COUNT(*) AS c, "
          "SUM(DISTINCT v) AS s, AVG(v) AS a FROM TABLE({window}) "
          "GROUP BY window_start, window_end")
#: more records after LATE: a window a restored run must still fill, and a late one
EVENTS = [*LATE, ("a", 14, 9), ("b", 27, 2), ("f", 20, 3), ("f", 26, 7), ("c", 40, 1)]


def _arrow(schema: Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.dtype) for f in schema])


def _planned(tmp_path: Path, sql: str) -> WindowAggregateExec:
    with event_session(write_csv_files(tmp_path / "t", [EVENTS]), "streaming", 1) as session:
        _, _, node, _ = plan_statement(session, parse_one(sql))  # type: ignore[arg-type]
    while not isinstance(node, WindowAggregateExec):
        node = node.inputs[0]
    return node


def _batches(node: WindowAggregateExec, sizes: Sequence[int]) -> list[pa.RecordBatch]:
    """EVENTS in arrival order, cut into batches of ``sizes`` (repeated)."""
    schema = _arrow(node.input.schema)
    assert schema.names == ["k", "ts", "v"]
    out, start, turn = [], 0, 0
    while start < len(EVENTS):
        chunk = EVENTS[start:start + sizes[turn % len(sizes)]]
        start, turn = start + len(chunk), turn + 1
        out.append(pa.RecordBatch.from_pydict({
            "k": [e[0] for e in chunk],
            "ts": [EPOCH + dt.timedelta(seconds=e[1]) for e in chunk],
            "v": [e[2] for e in chunk]}, schema=schema))
    return out


class Pipeline:
    """[watermark assigner ->] window aggregate, wired as the streaming runner wires them;
    ``restored`` opens fresh operators and restores the aggregate from a snapshot."""

    def __init__(self, node: WindowAggregateExec,
                 snapshot: dict[str, pa.Table] | None = None) -> None:
        self.node = node
        self.aggregate = WindowAggregateOperator(node)
        self.context = OperatorContext("window")
        self.aggregate.open(self.context)
        self.assigner: WatermarkAssignerOperator | None = None
        if isinstance(node.input, WatermarkAssignerExec):
            self.assigner = WatermarkAssignerOperator(node.input)
            self.assigner.open(OperatorContext("watermarks"))
        if snapshot is not None:
            self.aggregate.restore_state(snapshot)

    def run(self, batches: Iterable[pa.RecordBatch]) -> list[pa.RecordBatch]:
        out: list[pa.RecordBatch] = []
        for batch in batches:
            elements = ([batch] if self.assigner is None
                        else self.assigner.process_batch(0, batch))
            for element in elements:
                if isinstance(element, Watermark):
                    out.extend(self.aggregate.process_watermark(element.timestamp))
                else:
                    out.extend(self.aggregate.process_batch(0, element))
        return out

    def finish(self) -> list[pa.RecordBatch]:
        out = list(self.aggregate.end_input(0))
        self.aggregate.close()
        return out


def _rows(node: WindowAggregateExec, out: list[pa.RecordBatch]) -> list[tuple[object, ...]]:
    table = pa.Table.from_batches(out, schema=_arrow(node.schema))
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def _uninterrupted(node: WindowAggregateExec, batches: list[pa.RecordBatch]
                   ) -> tuple[list[tuple[object, ...]], int]:
    pipeline = Pipeline(node)
    rows = _rows(node, pipeline.run(batches) + pipeline.finish())
    return rows, pipeline.context.metrics[LATE_RECORDS_DROPPED]


def _check_every_cut(node: WindowAggregateExec, batches: list[pa.RecordBatch]) -> None:
    expected, late = _uninterrupted(node, batches)
    assert len(expected) >= 3 and late >= 1  # windows fire and records are dropped late
    for cut in range(len(batches) + 1):
        first = Pipeline(node)
        out = first.run(batches[:cut])
        snapshot = first.aggregate.snapshot_state(1)
        first.aggregate.close()
        second = Pipeline(node, snapshot)
        out += second.run(batches[cut:]) + second.finish()
        assert _rows(node, out) == expected, f"cut after batch {cut}"
        dropped = (first.context.metrics[LATE_RECORDS_DROPPED]
                   + second.context.metrics[LATE_RECORDS_DROPPED])
        assert dropped == late, f"cut after batch {cut}"


@pytest.mark.parametrize("sizes", [(1,), (3, 1, 2)], ids=["one-row", "mixed"])
@pytest.mark.parametrize("window", list(WINDOWS))
def test_keyed_restore_equals_uninterrupted_run(tmp_path: Path, window: str,
                                                sizes: tuple[int, ...]) -> None:
    node = _planned(tmp_path, KEYED.format(window=WINDOWS[window]))
    assert any(a.distinct for a in node.aggs) and isinstance(node.input, WatermarkAssignerExec)
    _check_every_cut(node, _batches(node, sizes))


@pytest.mark.parametrize("sizes", [(1,), (3, 1, 2)], ids=["one-row", "mixed"])
@pytest.mark.parametrize("window", ["tumble", "hop", "cumulate"])
def test_global_distinct_restore_equals_uninterrupted_run(tmp_path: Path, window: str,
                                                          sizes: tuple[int, ...]) -> None:
    node = _planned(tmp_path, GLOBAL.format(window=WINDOWS[window]))
    _check_every_cut(node, _batches(node, sizes))


@pytest.mark.parametrize("window", list(WINDOWS))
def test_restore_with_watermarks_generated_by_the_node(tmp_path: Path, window: str) -> None:
    """The node's own watermark generator is not saved (it restarts, as the assigner
    does); the restored windowing watermark keeps lateness as it was."""
    planned = _planned(tmp_path, KEYED.format(window=WINDOWS[window]))
    assert isinstance(planned.input, WatermarkAssignerExec)
    node = replace(planned, input=planned.input.input, watermark_delay_ms=2000)
    _check_every_cut(node, _batches(node, (1,)))


def test_uninterrupted_tumble_rows_are_the_hand_checked_ones(tmp_path: Path) -> None:
    """Anchors the comparisons above: the global TUMBLE run over LATE alone gives the
    rows the SQL tests check by hand (e@9 is late)."""
    node = _planned(tmp_path, GLOBAL.format(window=WINDOWS["tumble"]))
    batches = _batches(node, (1,))[:len(LATE)]
    pipeline = Pipeline(node)
    rows = _rows(node, pipeline.run(batches) + pipeline.finish())
    seconds = lambda t: int((t - EPOCH).total_seconds())  # noqa: E731
    assert [(seconds(r[0]), seconds(r[1]), *r[2:]) for r in rows] == [
        (0, 10, 4, 5, 11, 12 / 5), (10, 20, 1, 2, 4, 4.0), (20, 30, 1, 1, 7, 7.0)]
