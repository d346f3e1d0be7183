"""User-defined aggregates in event-time OVER aggregates: results equal DuckDB's built-in
equivalents for ROWS/RANGE, bounded and UNBOUNDED frames, across watermark releases (an
UNBOUNDED frame summarizes a partition's history into one row holding the class's
accumulator as JSON text), and a checkpoint restore mid-stream gives the same result."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from flowsql.planner.expressions import AggCall
from flowsql.planner.physical_streaming import OverAggregateExec
from flowsql.planner.schema import Field
from flowsql.sql.user_functions import describe_function
from tests.harness.operators import duck, leaf
from tests.runtime.operators.over.test_over_aggregate import (
    DUCK_FRAMES,
    SCHEMA,
    Run,
    _events,
    _script,
    rows,
)

MEAN = describe_function("my_mean", "tests.udfs.aggregates.Mean")
RANGE = describe_function("my_range", "tests.udfs.aggregates.Range")
SPREAD = describe_function("spread", "tests.udfs.aggregates.spread")


def _node(frame: str, preceding: int | None) -> OverAggregateExec:
    child, _ = leaf(SCHEMA.empty_table())
    k, ts, v, _seq = child.schema
    functions = [MEAN, RANGE] + ([SPREAD] if preceding is not None else [])
    calls = tuple(AggCall(f.name, (v.ref(),), f.result_type, function=f)  # type: ignore[arg-type]
                  for f in functions)
    fields = tuple(Field.fresh(f.name, c.dtype) for f, c in zip(functions, calls))
    return OverAggregateExec(child, (k.ref(),), ts.ref(), frame, preceding, calls, fields, 10.0)


def _run(plan: OverAggregateExec, script: list[Any]) -> list[tuple[Any, ...]]:
    driver = Run(plan)
    for step in script:
        driver.feed(step)
    return driver.finish()


@pytest.mark.parametrize(("frame", "preceding"), list(DUCK_FRAMES))
def test_equals_duckdb_without_late_rows(frame: str, preceding: int | None) -> None:
    events = _events(300, seed=7, disorder=3000)
    out = _run(_node(frame, preceding), _script(events, [7, 1, 20], delay=3000))
    table = pa.table({"k": pa.array([e[0] for e in events], pa.string()),
                      "ts": pa.array([e[1] for e in events], pa.int64()).cast(pa.timestamp("ms")),
                      "v": pa.array([e[2] for e in events], pa.int64()),
                      "seq": pa.array(range(len(events)), pa.int64())})
    window = f"OVER (PARTITION BY k {DUCK_FRAMES[(frame, preceding)]})"
    extent = f"MAX(v) {window} - MIN(v) {window}"
    expected = duck(
        f"SELECT k, epoch_ms(ts::TIMESTAMP) AS ts, v, AVG(v) {window} AS m, {extent} AS r"
        f"{', ' + extent + ' AS s' if preceding is not None else ''} FROM t ORDER BY ts, seq",
        t=table)
    want = [tuple(round(x, 9) if isinstance(x, float) else x for x in r.values())
            for r in expected.to_pylist()]
    assert out == want


@pytest.mark.parametrize(("frame", "preceding"), list(DUCK_FRAMES))
def test_checkpoint_restore_mid_stream_gives_the_same_result(frame: str,
                                                              preceding: int | None) -> None:
    events = _events(120, seed=3, disorder=2000)
    script = _script(events, [9, 4], delay=1000)
    plan = _node(frame, preceding)
    reference = _run(plan, script)
    cut = len(script) // 2
    first = Run(plan)
    for step in script[:cut]:
        first.feed(step)
    snapshot = first.operator.snapshot_state(1)
    if preceding is None:  # one summary row per partition, with JSON accumulators
        history = snapshot["keyed/history"]
        assert history.num_rows == len(set(history.column("k0").to_pylist()))
        assert all(isinstance(a, str) for a in history.column("a0").to_pylist())
    second = Run(plan)
    second.operator.restore_state(snapshot)
    for step in script[cut:]:
        second.feed(step)
    assert rows(first.out) + second.finish() == reference
