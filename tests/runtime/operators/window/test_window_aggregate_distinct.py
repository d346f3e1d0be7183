"""DISTINCT aggregates of the window aggregate: COUNT / SUM / AVG over the distinct non-NULL
values of each window, kept as value sets per slice or session so that a value seen in
two slices (or two merged sessions) of one window counts once. Hand-checked cases, then
the per-record reference model of Flink's semantics on random input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from flowsql.runtime.operators.window.accumulators import Accumulators
from flowsql.runtime.operators.window.window_specs import AggregateSpec, WindowSpec
from tests.harness.windows import SCHEMA, batches, feed, open_operator, reference, rows, run

DISTINCT = (AggregateSpec("count", 2, "keys", distinct=True),
            AggregateSpec("sum", 2, "total", distinct=True),
            AggregateSpec("avg", 2, "mean", distinct=True),
            AggregateSpec("count_star", None, "rows"))


def _distinct_summary(values: list[int | None]) -> tuple[Any, ...]:
    present = sorted({v for v in values if v is not None})
    return (len(present), sum(present) if present else None,
            sum(present) / len(present) if present else None, len(values))


def test_value_sets_merge_across_partials():
    accumulators = Accumulators(DISTINCT, SCHEMA)

    def partial(keys: list[str], values: list[int | None]) -> pa.Table:
        batch = pa.record_batch([pa.array(keys), pa.array([0] * len(keys), pa.int64()),
                                 pa.array(values, pa.int64()),
                                 pa.array([0] * len(keys), pa.int64())], schema=SCHEMA)
        table = pa.Table.from_pydict({"k": batch.column(0),
                                      **accumulators.arguments(batch)})
        return accumulators.partial(table, ["k"])

    first = partial(["a", "a", "a", "b", "c"], [1, 1, 2, None, 5])
    second = partial(["a", "a", "b", "c", "c"], [2, 3, None, 5, None])
    merged = accumulators.merge(pa.concat_tables([first, second]), ["k"]).sort_by("k")
    finished = [c.to_pylist() for c in accumulators.finish(merged)]
    assert list(zip(merged.column("k").to_pylist(), *finished)) == [
        ("a", 3, 6, 2.0, 5),         # {1, 2, 3} from 1 1 2 | 2 3
        ("b", 0, None, None, 2),     # only NULLs: an empty set
        ("c", 1, 5, 5.0, 3)]         # {5} seen in both partials counts once


def test_cumulate_counts_a_value_once_over_its_slices_and_drops_late_records():
    # WATERMARK ts - 2; CUMULATE step 5, size 10. a@6 v1 repeats a@1's value in the
    # second slice; a@3 v9 arrives at watermark 5 >= 4: late for [0, 5), joins [0, 10)
    events = [("a", 1, 1), ("a", 2, 2), ("a", 6, 1), ("a", 7, None), ("a", 3, 9),
              ("a", 12, 2), ("a", 8, 4)]
    out, late = run(WindowSpec.cumulate(5, 10), events, delay=2, aggregates=DISTINCT)
    assert out == [("a", 0, 5, 2, 3, 1.5, 2),           # {1, 2}
                   ("a", 0, 10, 3, 12, 4.0, 5),         # {1, 2, 9}: a@8 (wm 10) is late
                   ("a", 10, 15, 1, 2, 2.0, 1), ("a", 10, 20, 1, 2, 2.0, 1)]
    assert late == 1


def test_sessions_unite_their_value_sets_when_they_merge():
    # gap 5: a@1 [1, 6) v1, a@10 [10, 15) v1, then a@5 v2 bridges them into [1, 15)
    events = [("a", 1, 1), ("a", 10, 1), ("a", 5, 2), ("a", 30, 7)]
    out, late = run(WindowSpec.session(5), events, delay=20, aggregates=DISTINCT)
    assert out == [("a", 1, 15, 2, 3, 1.5, 3), ("a", 30, 35, 1, 7, 7.0, 1)]
    assert late == 0


@pytest.mark.parametrize("window", [WindowSpec.tumble(10), WindowSpec.hop(5, 15),
                                    WindowSpec.cumulate(5, 20), WindowSpec.session(4)],
                         ids=["tumble", "hop", "cumulate", "session"])
def test_random_input_matches_the_reference_model(window: WindowSpec):
    rng = np.random.default_rng(5)
    n = 300
    ts = np.sort(rng.integers(0, 400, n)) - rng.integers(0, 12, n)
    values = rng.integers(0, 6, n)
    nulls = rng.random(n) < 0.2
    keys = rng.choice(["x", "y", None], n)
    events = [(keys[i], int(ts[i]), None if nulls[i] else int(values[i])) for i in range(n)]
    expected, expected_late = reference(window, events, 5, summary=_distinct_summary)
    key = lambda r: tuple((v is None, v) for v in r)  # noqa: E731
    for sizes in ([n], [1], [7, 13]):
        out, late = run(window, events, 5, sizes=sizes * n, aggregates=DISTINCT)
        assert sorted(out, key=key) == sorted(expected, key=key)
        assert late == expected_late


def test_checkpoint_restore_keeps_the_value_sets():
    events = [("a", 1, 1), ("a", 6, 2), ("b", 7, 3), ("a", 8, 1), ("a", 14, 2), ("a", 30, 0)]
    reference_rows, _ = run(WindowSpec.cumulate(5, 20), events, delay=50,
                            aggregates=DISTINCT)
    first, _ = open_operator(WindowSpec.cumulate(5, 20), aggregates=DISTINCT)
    chunks = batches(events, [3, 3], delay=50)
    out = feed(first, *chunks[0])
    second, _ = open_operator(WindowSpec.cumulate(5, 20), aggregates=DISTINCT)
    second.restore_state(first.snapshot_state(1))
    out += feed(second, *chunks[1]) + list(second.end_input(0))
    assert rows(out) == reference_rows
