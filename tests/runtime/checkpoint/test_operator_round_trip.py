"""``restore(snapshot(s))`` behaves as ``s`` for every stateful streaming operator, through
real checkpoint files.

Per operator and seed: a random input (batches on each input, watermarks that follow the
largest event time seen, some records out of order and late, retractions where the
operator takes a changelog) or, for a source, its own batches. Run A processes it
uninterrupted. Run B processes a prefix cut at a random barrier point (between two steps,
before any input ended: no checkpoint is taken after that), snapshots the operator, writes
the tables to a checkpoint directory through each state backend (hashmap: Arrow IPC files;
rocksdb: a local RocksDB and its files) and reads them back (``_through_storage``), opens and
restores a NEW operator instance and processes the rest. B's outputs before and after the
cut, together, must equal A's: in emission order for append-only operators and sources
(watermarks included for the assigner), as the materialized changelog for updating ones.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import AggCall, Literal, SortKey
from flowsql.planner.physical import TableScanExec, ValuesExec, WindowAggregateExec
from flowsql.planner.physical_streaming import (
    GroupAggregateExec,
    IntervalJoinExec,
    OverAggregateExec,
    RankExec,
    StreamJoinExec,
    WatermarkAssignerExec,
    WindowedAggregateExec,
    WindowJoinExec,
)
from flowsql.planner.schema import Field, to_arrow_schema
from flowsql.runtime.changelog import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    materialize,
    with_row_kinds,
)
from flowsql.runtime.checkpoint.backends import restore_tables, snapshot_backend
from flowsql.runtime.checkpoint.metadata import CheckpointMetadata, OperatorState
from flowsql.runtime.checkpoint.storage import CheckpointStorage
from flowsql.runtime.events import Watermark
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.contract import PolledSource, Source
from flowsql.runtime.operators.window.window_aggregate import WindowAggregateOperator
from flowsql.runtime.operators.window.window_specs import WindowSpec
from flowsql.runtime.registry import create_operator
from flowsql.session.execute.planning import plan_statement
from flowsql.sql.statement_parser import parse_one
from tests.harness import windows
from tests.harness.operators import leaf, rows
from tests.harness.window_sql_events import LATE, event_session, write_csv_files

BACKENDS = ["hashmap", "rocksdb"]
SEEDS = range(3)
#: random cuts tried per seed; every cut when there are at most ``EVERY_CUT`` (sources and
#: the assigner: cheap, and their outputs differ only at some cuts when state is lost)
CUTS = 6
EVERY_CUT = 32
TS = pa.timestamp("ms")
KEYS = ["a", "b", "c", None]

# -- steps and runs ---------------------------------------------------------------------------

#: ("batch", input, batch) | ("watermark", ms) | ("end", input) | ("pull",): a source
#: emits its next batch (nothing once it has ended)
Step: TypeAlias = tuple[Any, ...]


@dataclasses.dataclass
class Scenario:
    """One operator and its input: ``make`` builds a fresh, unopened operator."""

    make: Callable[[], Operator]
    steps: list[Step]
    #: the output data columns; None: the output is compared element by element
    schema: pa.Schema | None = None
    #: the output is a changelog, compared materialized
    updating: bool = False
    #: the output is compared in emission order (a source's, the assigner's); otherwise
    #: per step as a multiset: rows one step fires together (windows, rows of several
    #: keys) come in the order of the operator's state, which a restore may change
    ordered: bool = False
    settings: dict[str, str] = dataclasses.field(default_factory=dict)


class Driver:
    """Drives one opened operator through steps as the streaming runner would."""

    def __init__(self, operator: Operator) -> None:
        self.operator = operator
        self._pulls: Iterator[pa.RecordBatch] | None = None

    def run(self, steps: Sequence[Step]) -> list[list[Any]]:
        """What each step emitted."""
        out: list[list[Any]] = []
        for step in steps:
            if step[0] == "batch":
                out.append(list(self.operator.process_batch(step[1], step[2])))
            elif step[0] == "watermark":
                out.append(list(self.operator.process_watermark(step[1])))
            elif step[0] == "end":
                out.append(list(self.operator.end_input(step[1])))
            else:
                out.append(self._pull())
        return out

    def _pull(self) -> list[pa.RecordBatch]:
        if isinstance(self.operator, PolledSource):
            return self.operator.poll(0.0) or []
        if self._pulls is None:
            assert isinstance(self.operator, Source)
            self._pulls = iter(self.operator.produce())
        return [batch for batch in [next(self._pulls, None)] if batch is not None]


def _open(scenario: Scenario) -> Operator:
    operator = scenario.make()
    operator.open(OperatorContext("under test", {"execution.batch-size": "4",
                                                 **scenario.settings}))
    return operator


def _through_storage(backend: str, directory: Path, checkpoint_id: int,
                     tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
    """Write one subtask's snapshot as a checkpoint of the state ``backend`` and read back
    what its restore gets (the one place that knows how a backend stores state)."""
    storage = CheckpointStorage.from_uri(str(directory), "job")
    writer = snapshot_backend(backend, storage, "operator", 0,
                              local_dir=str(directory / "local"))
    try:
        state = writer.write(checkpoint_id, tables)
    finally:
        writer.close()
    metadata = CheckpointMetadata("job", checkpoint_id, 0, 0, (
        OperatorState("operator", 1, 128, (state,)),))
    storage.commit(metadata)
    return restore_tables(storage, storage.read_metadata(checkpoint_id), "operator", 0, 1,
                          local_dir=str(directory / "local"))


def _result(scenario: Scenario, per_step: list[list[Any]]) -> list[Any]:
    if scenario.updating:
        assert scenario.schema is not None
        return rows(materialize([b for out in per_step for b in out], scenario.schema))
    result: list[Any] = []
    for out in per_step:
        emitted: list[Any] = []
        for element in out:
            if isinstance(element, Watermark):
                emitted.append(("watermark", element.timestamp))
            else:
                emitted.extend(rows(pa.Table.from_batches([element]), ordered=True))
        result.extend(emitted if scenario.ordered else [sorted(emitted, key=repr)])
    return result


def _cuts(rng: random.Random, steps: list[Step]) -> list[int]:
    """Barrier points: after step ``i`` for ``i`` up to the first end of input."""
    ends = [i for i, s in enumerate(steps) if s[0] == "end"]
    last = ends[0] if ends else len(steps)
    if last + 1 <= EVERY_CUT:
        return list(range(last + 1))
    return sorted(rng.sample(range(last + 1), CUTS))


# -- random inputs ----------------------------------------------------------------------------

def _events(rng: random.Random, count: int, disorder: float = 0.25
             ) -> list[tuple[Any, int, int]]:
    """(key, event time ms, value), ascending in time but for a share ``disorder`` of
    the records, which are up to 10 s behind."""
    out, now = [], 0
    for _ in range(count):
        now += rng.randrange(0, 2_500)
        ts = max(0, now - (rng.randrange(0, 10_000) if rng.random() < disorder else 0))
        out.append((rng.choice(KEYS), ts, rng.randrange(0, 20)))
    return out


def _chunks(rng: random.Random, items: list[Any]) -> Iterator[list[Any]]:
    start = 0
    while start < len(items):
        size = rng.randint(1, 4)
        yield items[start:start + size]
        start += size


def _event_steps(rng: random.Random, inputs: list[list[tuple[Any, int, int]]],
                 batch: Callable[[int, list[Any]], pa.RecordBatch], delay: int = 2_000
                 ) -> list[Step]:
    """Chunks of every input, interleaved at random, each followed (mostly) by the
    watermark the runner would pass on: the minimum over the inputs of ``max(event time
    seen there) - delay``, when it advanced; then the end of every input."""
    pending = [list(_chunks(rng, events)) for events in inputs]
    steps: list[Step] = []
    highs: list[int | None] = [None] * len(inputs)
    sent: int | None = None
    while any(pending):
        side = rng.choice([i for i, p in enumerate(pending) if p])
        chunk = pending[side].pop(0)
        steps.append(("batch", side, batch(side, chunk)))
        highs[side] = max([highs[side] or 0, *(e[1] for e in chunk)])
        if any(h is None for h in highs):
            continue
        watermark = min(h for h in highs if h is not None) - delay
        if (sent is None or watermark > sent) and rng.random() < 0.8:
            sent = watermark
            steps.append(("watermark", sent))
    return steps + [("end", i) for i in range(len(inputs))]


def _timestamp_batch(schema: pa.Schema) -> Callable[[int, list[Any]], pa.RecordBatch]:
    """(key, ts, value) rows as a batch of ``schema`` (string or int key, ts, value)."""
    def build(_: int, chunk: list[Any]) -> pa.RecordBatch:
        keys = [e[0] for e in chunk]
        if pa.types.is_integer(schema.field(0).type):
            keys = [None if k is None else KEYS.index(k) for k in keys]
        return pa.RecordBatch.from_arrays(
            [pa.array(keys, schema.field(0).type), pa.array([e[1] for e in chunk], TS),
             pa.array([e[2] for e in chunk], pa.int64())], schema=schema)
    return build


def _changelog_rows(rng: random.Random, count: int) -> list[tuple[int, tuple[Any, int]]]:
    """(row kind, (key, value)): insertions and retractions of rows inserted before, as
    -D or as a -U/+U pair."""
    live: list[tuple[Any, int]] = []
    out: list[tuple[int, tuple[Any, int]]] = []
    while len(out) < count:
        if live and rng.random() < 0.35:
            row = live.pop(rng.randrange(len(live)))
            if rng.random() < 0.5:
                out.append((DELETE, row))
            else:
                new = (row[0], rng.randrange(0, 20))
                out += [(UPDATE_BEFORE, row), (UPDATE_AFTER, new)]
                live.append(new)
        else:
            row = (rng.choice(KEYS), rng.randrange(0, 20))
            out.append((INSERT, row))
            live.append(row)
    return out


def _changelog_batch(schema: pa.Schema, entries: list[tuple[int, tuple[Any, int]]]
                     ) -> pa.RecordBatch:
    keys = [e[1][0] for e in entries]
    if pa.types.is_integer(schema.field(0).type):
        keys = [None if k is None else KEYS.index(k) for k in keys]
    batch = pa.RecordBatch.from_arrays(
        [pa.array(keys, schema.field(0).type),
         pa.array([e[1][1] for e in entries], schema.field(1).type)], schema=schema)
    return with_row_kinds(batch, np.array([e[0] for e in entries], np.int8))


def _changelog_steps(rng: random.Random, schemas: list[pa.Schema], count: int
                     ) -> list[Step]:
    """Changelog chunks of every input, interleaved at random (a -U never leaves its +U
    behind in another batch), then the end of every input."""
    pending = []
    for schema in schemas:
        entries = _changelog_rows(rng, count)
        chunks, start = [], 0
        while start < len(entries):
            end = min(len(entries), start + rng.randint(1, 4))
            if entries[end - 1][0] == UPDATE_BEFORE:
                end += 1
            chunks.append(_changelog_batch(schema, entries[start:end]))
            start = end
        pending.append(chunks)
    steps: list[Step] = []
    while any(pending):
        side = rng.choice([i for i, p in enumerate(pending) if p])
        steps.append(("batch", side, pending[side].pop(0)))
    return steps + [("end", i) for i in range(len(schemas))]


# -- the operators ----------------------------------------------------------------------------

def _window_aggregate(window: WindowSpec) -> Callable[[random.Random, Path], Scenario]:
    def scenario(rng: random.Random, _: Path) -> Scenario:
        events = _events(rng, 40)
        steps: list[Step] = []
        sizes = [rng.randint(1, 4) for _ in events]
        for batch, watermark in windows.batches(events, sizes, 2_000):
            steps.append(("batch", 0, batch))
            if watermark is not None:
                steps.append(("watermark", watermark))
        spec = windows.spec(window)
        return Scenario(lambda: WindowAggregateOperator.from_spec(spec),
                        steps + [("end", 0)])
    return scenario


SQL_WINDOWS = {
    "tumble": "TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)",
    "hop": "HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
    "cumulate": "CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
    "session": "SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL '3' SECOND)",
}


def _planned_window_aggregate(window: str) -> Callable[[random.Random, Path], Scenario]:
    """The node SQL planning makes, generating its own watermarks (``watermark_delay_ms``)
    as it does over the scan of the table that declares them."""
    def scenario(rng: random.Random, tmp_path: Path) -> Scenario:
        sql = (f"SELECT k, window_start, window_end, COUNT(*) AS c, SUM(v) AS s, "
               f"COUNT(DISTINCT v) AS dv FROM TABLE({SQL_WINDOWS[window]}) "
               "GROUP BY k, window_start, window_end")
        directory = write_csv_files(tmp_path / "t", [LATE])
        with event_session(directory, "streaming", 1) as session:
            _, _, node, _ = plan_statement(session, parse_one(sql))  # type: ignore[arg-type]
        while not isinstance(node, WindowAggregateExec):
            node = node.inputs[0]
        if isinstance(node.input, WatermarkAssignerExec):
            node = dataclasses.replace(node, input=node.input.input, watermark_delay_ms=2_000)
        schema = to_arrow_schema(node.input.schema)
        steps = [s for s in _event_steps(rng, [_events(rng, 40)], _timestamp_batch(schema))
                 if s[0] != "watermark"]
        planned = node
        return Scenario(lambda: create_operator(planned), steps)
    return scenario


def _cascading_window_aggregate(rng: random.Random, _: Path) -> Scenario:
    """SUM and COUNT per 10-second window over rows that carry their window (the output
    of a window Top-N or window join in a plan)."""
    child, _batches = leaf(WINDOWED.empty_table())
    k, _ts, v, ws, we = child.schema
    calls = (AggCall("count_star", (), T.INT64), AggCall("sum", (v.ref(),), T.INT64))
    fields = tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))
    node = WindowedAggregateExec(child, (k.ref(), ws.ref(), we.ref()), (k, ws, we), calls,
                                 fields, (ws.ref(), we.ref()), 1.0)
    steps = _event_steps(rng, [_events(rng, 40)], _windowed_batch)
    return Scenario(lambda: create_operator(node), steps)


def _group_aggregate(rng: random.Random, _: Path) -> Scenario:
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    child, _batches = leaf(schema.empty_table())
    k, v = (f.ref() for f in child.schema)
    calls = (AggCall("count_star", (), T.INT64), AggCall("sum", (v,), T.INT64),
             AggCall("max", (v,), T.INT64), AggCall("count", (v,), T.INT64, True))
    fields = tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))
    node = GroupAggregateExec(child, (k,), (child.schema[0],), calls, fields, 1.0)
    return Scenario(lambda: create_operator(node), _changelog_steps(rng, [schema], 40),
                    to_arrow_schema(node.schema), updating=True)


def _rank_node(table: pa.Table, order: list[tuple[str, bool]], lower: int, upper: int, *,
               rank: bool = False, time_attribute: str | None = None,
               window: bool = False) -> RankExec:
    child, _ = leaf(table)
    by_name = {f.name: f for f in child.schema}
    return RankExec(child, (by_name["k"].ref(),),
                    tuple(SortKey(by_name[c].ref(), ascending) for c, ascending in order),
                    lower, upper, Field.fresh("rn", pa.int64()) if rank else None,
                    time_attribute,
                    (by_name["ws"].ref(), by_name["we"].ref()) if window else None, 1.0)


EVENTS = pa.schema([("k", pa.string()), ("ts", TS), ("v", pa.int64())])


def _rank(order: list[tuple[str, bool]], lower: int, upper: int, *, rank: bool = False,
          time_attribute: str | None = None) -> Callable[[random.Random, Path], Scenario]:
    def scenario(rng: random.Random, _: Path) -> Scenario:
        node = _rank_node(EVENTS.empty_table(), order, lower, upper, rank=rank,
                          time_attribute=time_attribute)
        steps = _event_steps(rng, [_events(rng, 40)], _timestamp_batch(EVENTS))
        return Scenario(lambda: create_operator(node), steps, to_arrow_schema(node.schema),
                        updating=True)
    return scenario


WINDOWED = pa.schema([("k", pa.string()), ("ts", TS), ("v", pa.int64()), ("ws", TS),
                      ("we", TS)])


def _windowed_batch(_: int, chunk: list[Any]) -> pa.RecordBatch:
    """(key, ts, value) rows with their 10-second tumbling window."""
    ts = np.array([e[1] for e in chunk], np.int64)
    start = ts - ts % 10_000
    return pa.RecordBatch.from_arrays(
        [pa.array([e[0] for e in chunk], pa.string()), pa.array(ts, TS),
         pa.array([e[2] for e in chunk], pa.int64()), pa.array(start, TS),
         pa.array(start + 10_000, TS)], schema=WINDOWED)


def _window_rank(rng: random.Random, _: Path) -> Scenario:
    node = _rank_node(WINDOWED.empty_table(), [("v", False)], 1, 2, rank=True, window=True)
    steps = _event_steps(rng, [_events(rng, 40)], _windowed_batch)
    return Scenario(lambda: create_operator(node), steps)


def _over_aggregate(frame: str, preceding: int | None
                    ) -> Callable[[random.Random, Path], Scenario]:
    def scenario(rng: random.Random, _: Path) -> Scenario:
        child, _batches = leaf(EVENTS.empty_table())
        k, ts, v = (f.ref() for f in child.schema)
        calls = (AggCall("count_star", (), T.INT64), AggCall("sum", (v,), T.INT64),
                 AggCall("max", (v,), T.INT64))
        fields = tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))
        node = OverAggregateExec(child, (k,), ts, frame, preceding, calls, fields, 1.0)
        steps = _event_steps(rng, [_events(rng, 40)], _timestamp_batch(EVENTS))
        return Scenario(lambda: create_operator(node), steps)
    return scenario


SIDES = [pa.schema([("k", pa.int64()), ("lt", TS), ("a", pa.int64())]),
         pa.schema([("k", pa.int64()), ("rt", TS), ("b", pa.int64())])]


def _interval_join(kind: str) -> Callable[[random.Random, Path], Scenario]:
    def scenario(rng: random.Random, _: Path) -> Scenario:
        left, _l = leaf(SIDES[0].empty_table())
        right, _r = leaf(SIDES[1].empty_table())
        node = IntervalJoinExec(left, right, kind, (left.schema[0].ref(),),
                                (right.schema[0].ref(),), left.schema[1].ref(),
                                right.schema[1].ref(), -2_000, 3_000, None, 1.0)
        batch = _timestamp_batch
        steps = _event_steps(rng, [_events(rng, 30), _events(rng, 30)],
                             lambda side, chunk: batch(SIDES[side])(side, chunk))
        return Scenario(lambda: create_operator(node), steps)
    return scenario


def _window_join(kind: str) -> Callable[[random.Random, Path], Scenario]:
    def scenario(rng: random.Random, _: Path) -> Scenario:
        def side(value: str) -> pa.Table:
            return pa.table({"k": pa.array([], pa.string()), "ws": pa.array([], TS),
                             "we": pa.array([], TS), value: pa.array([], pa.int64())})
        left, _l = leaf(side("a"))
        right, _r = leaf(side("b"))
        lk, ls, le, _la = (f.ref() for f in left.schema)
        rk, rs, re, _rb = (f.ref() for f in right.schema)
        node = WindowJoinExec(left, right, kind, (lk, ls, le), (rk, rs, re), (ls, le),
                              (rs, re), None, 1.0)

        def batch(input: int, chunk: list[Any]) -> pa.RecordBatch:
            windowed = _windowed_batch(input, chunk)
            return pa.RecordBatch.from_arrays(
                [windowed.column(0), windowed.column(3), windowed.column(4),
                 windowed.column(2)], schema=to_arrow_schema(node.inputs[input].schema))
        steps = _event_steps(rng, [_events(rng, 30), _events(rng, 30)], batch)
        return Scenario(lambda: create_operator(node), steps)
    return scenario


def _stream_join(kind: str) -> Callable[[random.Random, Path], Scenario]:
    def scenario(rng: random.Random, _: Path) -> Scenario:
        schemas = [pa.schema([("k", pa.int64()), ("a", pa.int64())]),
                   pa.schema([("k", pa.int64()), ("b", pa.int64())])]
        left, _l = leaf(schemas[0].empty_table())
        right, _r = leaf(schemas[1].empty_table())
        node = StreamJoinExec(left, right, kind, (left.schema[0].ref(),),
                              (right.schema[0].ref(),), None, True, 1.0)
        steps = _changelog_steps(rng, schemas, 25)
        return Scenario(lambda: create_operator(node), steps, to_arrow_schema(node.schema),
                        updating=True)
    return scenario


def _watermark_assigner(rng: random.Random, _: Path) -> Scenario:
    child, _batches = leaf(EVENTS.empty_table())
    node = WatermarkAssignerExec(child, child.schema[1].ref(), 2_000, 0, 1.0)
    steps = [s for s in _event_steps(rng, [_events(rng, 40, disorder=0.5)],
                                     _timestamp_batch(EVENTS))
             if s[0] == "batch"]  # upstream watermarks do not pass an assigner
    return Scenario(lambda: create_operator(node), steps, ordered=True)


def _pulls(count: int) -> list[Step]:
    return [("pull",)] * count


def _datagen_scan(rng: random.Random, _: Path) -> Scenario:
    schema = pa.schema([("id", pa.int64()), ("v", pa.int32()), ("s", pa.string())])
    table = TableEntry("g", schema, {
        "connector": "datagen", "number-of-rows": str(rng.randint(10, 60)),
        "rows-per-second": "0", "fields.id.kind": "sequence", "fields.id.start": "1",
        "fields.id.end": "1000", "fields.s.length": "5", "seed": str(rng.randrange(100))})
    fields = tuple(Field.fresh(f.name, f.type) for f in schema)
    node = TableScanExec(table, (fields[0], fields[2]), (), 1.0)
    return Scenario(lambda: create_operator(node), _pulls(20), ordered=True)


def _values(rng: random.Random, _: Path) -> Scenario:
    fields = (Field.fresh("id", T.INT64), Field.fresh("name", T.STRING))
    literals = tuple((Literal(i, T.INT64), Literal(f"n{rng.randrange(4)}", T.STRING))
                     for i in range(rng.randint(1, 30)))
    node = ValuesExec(fields, literals, float(len(literals)))
    return Scenario(lambda: create_operator(node), _pulls(10), ordered=True)


def _write_files(rng: random.Random, directory: Path, fmt: str) -> None:
    directory.mkdir()
    for index in range(rng.randint(1, 4)):
        # an empty CSV file is an error; one file at least has rows
        count = rng.randint(0 if fmt == "parquet" and index else 1, 12)
        ids = list(range(index * 100, index * 100 + count))
        data = pa.table({"id": pa.array(ids, pa.int64()),
                         "name": [f"n{rng.randrange(4)}" for _ in ids]})
        if fmt == "parquet":
            pq.write_table(data, directory / f"part-{index}.parquet",
                           row_group_size=rng.randint(1, 5))
        else:
            (directory / f"part-{index}.csv").write_text(
                "".join(f"{i},{n}\n" for i, n in zip(ids, data["name"].to_pylist())))


def _filesystem_scan(fmt: str, watched: bool = False
                     ) -> Callable[[random.Random, Path], Scenario]:
    def scenario(rng: random.Random, tmp_path: Path) -> Scenario:
        directory = tmp_path / "table"
        _write_files(rng, directory, fmt)
        schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
        options = {"connector": "filesystem", "path": str(directory), "format": fmt}
        if watched:
            options["source.monitor-interval"] = "1 h"
        fields = tuple(Field.fresh(f.name, f.type) for f in schema)
        node = TableScanExec(TableEntry("t", schema, options), fields, (), 1.0)
        return Scenario(lambda: create_operator(node), _pulls(30), ordered=True)
    return scenario


CASES: dict[str, Callable[[random.Random, Path], Scenario]] = {
    "window-aggregate-tumble": _window_aggregate(WindowSpec.tumble(10_000)),
    "window-aggregate-hop": _window_aggregate(WindowSpec("hop", size=10_000, slide=5_000)),
    "window-aggregate-cumulate": _window_aggregate(
        WindowSpec("cumulate", size=10_000, step=5_000)),
    "window-aggregate-session": _window_aggregate(WindowSpec("session", gap=3_000)),
    **{f"planned-window-aggregate-{w}": _planned_window_aggregate(w) for w in SQL_WINDOWS},
    "cascading-window-aggregate": _cascading_window_aggregate,
    "group-aggregate": _group_aggregate,
    "top-n": _rank([("v", False)], 1, 2),
    "rank-with-offset": _rank([("v", True), ("ts", False)], 2, 3, rank=True),
    "rowtime-deduplicate-first": _rank([("ts", True)], 1, 1, time_attribute="rowtime"),
    "rowtime-deduplicate-last": _rank([("ts", False)], 1, 1, time_attribute="rowtime"),
    "over-rows": _over_aggregate("rows", 2),
    "over-range": _over_aggregate("range", 5_000),
    "over-unbounded": _over_aggregate("rows", None),
    "interval-join-inner": _interval_join("inner"),
    "interval-join-full": _interval_join("full"),
    "window-join-inner": _window_join("inner"),
    "window-join-full": _window_join("full"),
    "stream-join-inner": _stream_join("inner"),
    "stream-join-left": _stream_join("left"),
    "stream-join-full": _stream_join("full"),
    "window-rank": _window_rank,
    "watermark-assigner": _watermark_assigner,
    "datagen-scan": _datagen_scan,
    "values": _values,
    "filesystem-scan-parquet": _filesystem_scan("parquet"),
    "filesystem-scan-csv": _filesystem_scan("csv"),
    "watched-scan": _filesystem_scan("csv", watched=True),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("case", list(CASES))
def test_restored_run_equals_uninterrupted_run(tmp_path: Path, case: str, seed: int,
                                               backend: str) -> None:
    rng = random.Random(f"{case}/{seed}")
    scenario = CASES[case](rng, tmp_path)
    uninterrupted = _open(scenario)
    expected_out = Driver(uninterrupted).run(scenario.steps)
    uninterrupted.close()
    expected = _result(scenario, expected_out)
    assert any(row for row in expected), "the input produces output"
    for number, cut in enumerate(_cuts(rng, scenario.steps), start=1):
        first = _open(scenario)
        out = Driver(first).run(scenario.steps[:cut])
        tables = first.snapshot_state(number)
        first.close()
        restored = _open(scenario)
        restored.restore_state(_through_storage(backend, tmp_path / "checkpoints", number,
                                                tables))
        out += Driver(restored).run(scenario.steps[cut:])
        restored.close()
        assert _result(scenario, out) == expected, f"cut after step {cut}"
