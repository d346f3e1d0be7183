"""ROW_NUMBER-based streaming operators (``RankExec``): window Top-N and window
deduplication, rowtime deduplication, unwindowed Top-N.

Expectations are worked out by hand from Flink's documented semantics (each test says
how); the re-chunking tests compare the materialized final result with DuckDB's
ROW_NUMBER over the same rows, ties broken by arrival order (the ``id`` column counts
arrivals), which is the order the operators promise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pytest

from flowsql.planner.expressions import SortKey
from flowsql.planner.physical_streaming import RankExec
from flowsql.planner.schema import Field, to_arrow_schema
from flowsql.runtime.changelog import LABELS, is_updating, materialize, row_kinds
from flowsql.runtime.events import MAX_WATERMARK
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.registry import create_operator
from tests.harness.operators import duck, leaf, rows

Step: TypeAlias = pa.RecordBatch | int  # a batch, or a watermark (ms)
WINDOWED = pa.schema([("k", pa.string()), ("ts", pa.timestamp("ms")), ("v", pa.int64()),
                      ("ws", pa.timestamp("ms")), ("we", pa.timestamp("ms"))])


def make_node(table: pa.Table, partition: Sequence[str], order: Sequence[tuple[str, bool]],
              lower: int, upper: int, *, rank: bool = False, time_attribute: str | None = None,
              window: bool = False) -> RankExec:
    child, _ = leaf(table)
    by_name = {f.name: f for f in child.schema}
    return RankExec(child, tuple(by_name[c].ref() for c in partition),
                    tuple(SortKey(by_name[c].ref(), ascending) for c, ascending in order),
                    lower, upper, Field.fresh("rn", pa.int64()) if rank else None,
                    time_attribute,
                    (by_name["ws"].ref(), by_name["we"].ref()) if window else None,
                    float(table.num_rows))


def open_operator(node: RankExec) -> tuple[Operator, OperatorContext]:
    operator = create_operator(node)
    context = OperatorContext("rank")
    operator.open(context)
    return operator, context


def run(node: RankExec, steps: Sequence[Step], operator: Operator | None = None,
        finish: bool = True) -> tuple[list[list[pa.RecordBatch]], Operator, OperatorContext]:
    """Output per step (plus one for the end of input: watermark +inf, then end_input)."""
    context = OperatorContext("rank")
    if operator is None:
        operator, context = open_operator(node)
    out: list[list[pa.RecordBatch]] = []
    for step in steps:
        if isinstance(step, pa.RecordBatch):
            out.append(list(operator.process_batch(0, step)))
        else:
            out.append(list(operator.process_watermark(step)))
    if finish:
        out.append(list(operator.process_watermark(MAX_WATERMARK)) + list(operator.end_input(0)))
    return out, operator, context


def changes(node: RankExec, batches: Sequence[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    """(kind, *row) per output row, in emitted order."""
    width = len(node.schema)
    out: list[tuple[Any, ...]] = []
    for batch in batches:
        kinds = [LABELS[k] for k in row_kinds(batch, width)]
        data = pa.Table.from_batches([batch.select(list(range(width)))])
        out.extend((kind, *row) for kind, row in zip(kinds, rows(data, ordered=True)))
    return out


def retractions_first(log: list[tuple[Any, ...]]) -> tuple[list[Any], list[Any]]:
    """(retractions, additions) of one batch's changelog, checking retractions come first."""
    retracting = [entry[0] in ("-U", "-D") for entry in log]
    assert retracting == sorted(retracting, reverse=True), log
    return ([e for e in log if e[0] in ("-U", "-D")], [e for e in log if e[0] in ("+I", "+U")])


def final(node: RankExec, out: list[list[pa.RecordBatch]]) -> list[tuple[Any, ...]]:
    schema = to_arrow_schema(node.schema)
    return rows(materialize([b for step in out for b in step], schema))


def windowed(events: Sequence[tuple[str, int, int]], size: int = 10) -> pa.RecordBatch:
    """Rows (key, ts, value) with their TUMBLE(size) window bounds, all in milliseconds."""
    ts = np.array([e[1] for e in events], np.int64)
    start = ts - ts % size
    return pa.record_batch([pa.array([e[0] for e in events]),
                            pa.array(ts).cast(pa.timestamp("ms")),
                            pa.array([e[2] for e in events], pa.int64()),
                            pa.array(start).cast(pa.timestamp("ms")),
                            pa.array(start + size).cast(pa.timestamp("ms"))], schema=WINDOWED)


def inserted(node: RankExec, batches: Sequence[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    """Rows of insert-only output (checked to carry no row kinds), as (key, ts ms, v, ...)."""
    out = []
    for batch in batches:
        assert not is_updating(batch, len(node.schema))
        for row in rows(pa.Table.from_batches([batch])):
            k, ts, v, _, we, *rest = row
            out.append((k, _ms(ts), v, _ms(we), *rest))
    return sorted(out)


def _ms(value: Any) -> int:
    return int(pa.scalar(value, pa.timestamp("ms")).cast(pa.int64()).as_py())


# -- window Top-N / window deduplication -----------------------------------------------------

# TUMBLE(10). Arrival order with the watermarks sent between batches:
#   [a@1 v5, a@3 v9, b@2 v4, a@12 v7]  wm 5
#   [a@4 v9, a@8 v1, b@15 v3, a@6 v6]  wm 9     -> [0, 10) fires (9 = end - 1)
#   [a@7 v100 (late), b@11 v8, a@19 v2]  wm 25  -> [10, 20) fires
#   [a@14 v50 (late), a@27 v1]  end             -> [20, 30) fires
WINDOW_STEPS: list[Step] = [
    windowed([("a", 1, 5), ("a", 3, 9), ("b", 2, 4), ("a", 12, 7)]), 5,
    windowed([("a", 4, 9), ("a", 8, 1), ("b", 15, 3), ("a", 6, 6)]), 9,
    windowed([("a", 7, 100), ("b", 11, 8), ("a", 19, 2)]), 25,
    windowed([("a", 14, 50), ("a", 27, 1)]),
]


def test_window_top3_per_key_fires_at_window_end_and_drops_late_rows():
    node = make_node(pa.Table.from_batches([WINDOW_STEPS[0]]), ["k"], [("v", False)], 1, 3,
                     rank=True, window=True)
    out, _, context = run(node, WINDOW_STEPS)
    per_step = [inserted(node, step) for step in out]
    # [0, 10) of a: v 9 (a@3), 9 (a@4, ties keep arrival order), 6, 5, 1 -> top 3
    assert per_step[3] == [("a", 3, 9, 10, 1), ("a", 4, 9, 10, 2), ("a", 6, 6, 10, 3),
                           ("b", 2, 4, 10, 1)]
    # a@7 v100 arrived after [0, 10) fired: dropped, never emitted
    assert per_step[5] == [("a", 12, 7, 20, 1), ("a", 19, 2, 20, 2),
                           ("b", 11, 8, 20, 1), ("b", 15, 3, 20, 2)]
    assert per_step[7] == [("a", 27, 1, 30, 1)]  # a@14 v50 was late for [10, 20)
    assert [p for i, p in enumerate(per_step) if i not in (3, 5, 7)] == [[]] * 5
    assert context.metrics["late_records_dropped"] == 2


def test_window_top_n_with_offset_and_without_rank_column():
    node = make_node(pa.Table.from_batches([WINDOW_STEPS[0]]), ["k"], [("v", False)], 2, 3,
                     window=True)
    out, _, _ = run(node, WINDOW_STEPS)
    assert inserted(node, [b for step in out for b in step]) == [
        ("a", 4, 9, 10), ("a", 6, 6, 10), ("a", 19, 2, 20), ("b", 15, 3, 20)]


def test_window_deduplication_keep_first_and_keep_last():
    # c@5 twice: keep-first keeps the first arrival, keep-last the last (Flink's >=)
    steps: list[Step] = [windowed([("c", 5, 1)]), *WINDOW_STEPS[:2],
                         windowed([("c", 5, 2)]), *WINDOW_STEPS[2:]]
    first = make_node(pa.Table.from_batches([WINDOW_STEPS[0]]), ["k"], [("ts", True)], 1, 1,
                      time_attribute="rowtime", window=True)
    out, _, context = run(first, steps)
    assert inserted(first, [b for step in out for b in step]) == [
        ("a", 1, 5, 10), ("a", 12, 7, 20), ("a", 27, 1, 30), ("b", 2, 4, 10),
        ("b", 11, 8, 20), ("c", 5, 1, 10)]
    assert context.metrics["late_records_dropped"] == 2
    last = make_node(pa.Table.from_batches([WINDOW_STEPS[0]]), ["k"], [("ts", False)], 1, 1,
                     time_attribute="rowtime", window=True)
    out, _, _ = run(last, steps)
    assert inserted(last, [b for step in out for b in step]) == [
        ("a", 8, 1, 10), ("a", 19, 2, 20), ("a", 27, 1, 30), ("b", 2, 4, 10),
        ("b", 15, 3, 20), ("c", 5, 2, 10)]


def test_window_rank_survives_snapshot_and_restore():
    node = make_node(pa.Table.from_batches([WINDOW_STEPS[0]]), ["k"], [("v", False)], 1, 3,
                     rank=True, window=True)
    whole, _, _ = run(node, WINDOW_STEPS)
    head, operator, _ = run(node, WINDOW_STEPS[:3], finish=False)
    snapshot = operator.snapshot_state(1)
    restored, context = open_operator(node)
    restored.restore_state(snapshot)
    tail, _, _ = run(node, WINDOW_STEPS[3:], operator=restored)
    flat = [b for step in head + tail for b in step]
    assert inserted(node, flat) == inserted(node, [b for step in whole for b in step])
    assert context.metrics["late_records_dropped"] == 2  # the restored watermark judges


# -- rowtime deduplication -------------------------------------------------------------------

DEDUP = pa.table({"k": ["a", "b", "a", "a", "b", "a", "b"],
                  "ts": pa.array([10, 5, 7, 12, 5, 7, 3]).cast(pa.timestamp("ms")),
                  "v": [1, 2, 3, 4, 5, 6, 7]})


def _ts_rows(log: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [(kind, k, _ms(ts), v, *rest) for kind, k, ts, v, *rest in log]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_rowtime_dedup_keep_first_changelog_is_per_record(size):
    # replace when the stored row is missing or ts is strictly smaller:
    # a@10 +I; b@5 +I; a@7 < 10 replaces; a@12 no; b@5 not < 5; a@7 not < 7; b@3 replaces
    node = make_node(DEDUP, ["k"], [("ts", True)], 1, 1, time_attribute="rowtime")
    out, _, _ = run(node, DEDUP.to_batches(max_chunksize=size))
    assert _ts_rows(changes(node, [b for step in out for b in step])) == [
        ("+I", "a", 10, 1), ("+I", "b", 5, 2), ("-U", "a", 10, 1), ("+U", "a", 7, 3),
        ("-U", "b", 5, 2), ("+U", "b", 3, 7)]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_rowtime_dedup_keep_last_changelog_is_per_record(size):
    # replace when the stored row is missing or ts >= stored ts:
    # a@10 +I; b@5 +I; a@7 no; a@12 replaces; b@5 >= 5 replaces; a@7 no; b@3 no
    node = make_node(DEDUP, ["k"], [("ts", False)], 1, 1, time_attribute="rowtime",
                     rank=True)
    out, _, _ = run(node, DEDUP.to_batches(max_chunksize=size))
    assert _ts_rows(changes(node, [b for step in out for b in step])) == [
        ("+I", "a", 10, 1, 1), ("+I", "b", 5, 2, 1), ("-U", "a", 10, 1, 1),
        ("+U", "a", 12, 4, 1), ("-U", "b", 5, 2, 1), ("+U", "b", 5, 5, 1)]
    assert _ts_rows([("+I", *r) for r in final(node, out)]) == [
        ("+I", "a", 12, 4, 1), ("+I", "b", 5, 5, 1)]


def test_rowtime_dedup_keep_first_drops_rows_at_or_behind_the_watermark():
    # watermark 7 after a@10, b@5: a@6 < 7 is late, a@7 at the watermark is on time and
    # replaces a@10, a@12 no, b@5 late; watermark 8: c@7 is late although c has no row
    # yet, b@3 late, c@9 +I, c@8 (at the watermark) replaces c@9.
    batches = [pa.table({"k": ks, "ts": pa.array(ts).cast(pa.timestamp("ms")), "v": vs})
               .to_batches()[0] for ks, ts, vs in
               [(["a", "b"], [10, 5], [1, 2]), (["a", "a", "a", "b"], [6, 7, 12, 5],
                                                 [3, 4, 5, 6]),
                (["c", "b", "c", "c"], [7, 3, 9, 8], [7, 8, 9, 10])]]
    node = make_node(DEDUP, ["k"], [("ts", True)], 1, 1, time_attribute="rowtime")
    out, _, context = run(node, [batches[0], 7, batches[1], 8, batches[2]])
    assert _ts_rows(changes(node, [b for step in out for b in step])) == [
        ("+I", "a", 10, 1), ("+I", "b", 5, 2), ("-U", "a", 10, 1), ("+U", "a", 7, 4),
        ("+I", "c", 9, 9), ("-U", "c", 9, 9), ("+U", "c", 8, 10)]
    assert context.metrics["late_records_dropped"] == 4


def test_rowtime_dedup_keep_last_judges_late_rows_too():
    # keep-last has no lateness: b@5 >= 5 replaces although the watermark is 7
    node = make_node(DEDUP, ["k"], [("ts", False)], 1, 1, time_attribute="rowtime")
    batches = DEDUP.to_batches(max_chunksize=2)
    out, _, _ = run(node, [batches[0], 7, *batches[1:]])
    assert _ts_rows([("+I", *r) for r in final(node, out)]) == [
        ("+I", "a", 12, 4), ("+I", "b", 5, 5)]


def test_rowtime_dedup_restores_its_watermark():
    node = make_node(DEDUP, ["k"], [("ts", True)], 1, 1, time_attribute="rowtime")
    batches = DEDUP.to_batches(max_chunksize=2)
    _, operator, _ = run(node, [batches[0], 7], finish=False)
    restored, context = open_operator(node)
    restored.restore_state(operator.snapshot_state(3))
    # a@7 a@12 | b@5 a@7 | b@3 after watermark 7: b@5 and b@3 are late; a@7 replaces a@10
    out, _, _ = run(node, batches[1:], operator=restored)
    assert _ts_rows(changes(node, [b for step in out for b in step])) == [
        ("-U", "a", 10, 1), ("+U", "a", 7, 3)]
    assert context.metrics["late_records_dropped"] == 2


def test_rowtime_dedup_survives_snapshot_and_restore():
    node = make_node(DEDUP, ["k"], [("ts", True)], 1, 1, time_attribute="rowtime")
    batches = DEDUP.to_batches(max_chunksize=2)
    head, operator, _ = run(node, batches[:2], finish=False)
    restored, _ = open_operator(node)
    restored.restore_state(operator.snapshot_state(7))
    tail, _, _ = run(node, batches[2:], operator=restored)
    assert _ts_rows(changes(node, [b for step in head + tail for b in step])) == [
        ("+I", "a", 10, 1), ("+I", "b", 5, 2), ("-U", "a", 10, 1), ("+U", "a", 7, 3),
        ("-U", "b", 5, 2), ("+U", "b", 3, 7)]


# -- unwindowed Top-N --------------------------------------------------------------------------

TOPN = pa.schema([("k", pa.string()), ("v", pa.int64()), ("id", pa.int64())])


def _batch(values: list[tuple[str, int, int]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([dict(zip(TOPN.names, v)) for v in values], schema=TOPN)


# ORDER BY v DESC, top 2 per k; one changelog per batch
TOPN_BATCHES = [_batch([("a", 5, 1), ("a", 3, 2), ("b", 4, 3)]),
                _batch([("a", 4, 4), ("b", 4, 5), ("a", 6, 6)]),
                _batch([("b", 9, 7), ("a", 1, 8)])]


def _topn_node(rank: bool, lower: int = 1, upper: int = 2,
               partition: Sequence[str] = ("k",)) -> RankExec:
    return make_node(pa.Table.from_batches(TOPN_BATCHES), partition, [("v", False)],
                     lower, upper, rank=rank)


def test_top_n_without_rank_column_emits_rows_entering_and_leaving():
    node = _topn_node(rank=False)
    out, _, _ = run(node, TOPN_BATCHES)
    logs = [retractions_first(changes(node, step)) for step in out]
    to_sets = [(sorted(r), sorted(a)) for r, a in logs]
    assert to_sets == [
        ([], [("+I", "a", 3, 2), ("+I", "a", 5, 1), ("+I", "b", 4, 3)]),
        # a: 6, 5 | 4, 3 -> a@3 leaves, a@6 enters (a@5 only moves); b: 4 (stored) ties
        # 4 (new): the stored row stays first, the new one fills rank 2
        ([("-D", "a", 3, 2)], [("+I", "a", 6, 6), ("+I", "b", 4, 5)]),
        # b: 9 enters, the newer 4 is pushed out; a: 1 ranks 3rd, nothing changes
        ([("-D", "b", 4, 5)], [("+I", "b", 9, 7)]),
        ([], []),
    ]
    assert final(node, out) == [("a", 5, 1), ("a", 6, 6), ("b", 4, 3), ("b", 9, 7)]


def test_top_n_with_rank_column_updates_changed_positions():
    node = _topn_node(rank=True)
    out, _, _ = run(node, TOPN_BATCHES)
    logs = [retractions_first(changes(node, step)) for step in out]
    assert [(sorted(r), sorted(a)) for r, a in logs] == [
        ([], [("+I", "a", 3, 2, 2), ("+I", "a", 5, 1, 1), ("+I", "b", 4, 3, 1)]),
        # a: rank 1 id1 -> id6, rank 2 id2 -> id1; b: rank 2 newly filled
        ([("-U", "a", 3, 2, 2), ("-U", "a", 5, 1, 1)],
         [("+I", "b", 4, 5, 2), ("+U", "a", 5, 1, 2), ("+U", "a", 6, 6, 1)]),
        ([("-U", "b", 4, 3, 1), ("-U", "b", 4, 5, 2)],
         [("+U", "b", 4, 3, 2), ("+U", "b", 9, 7, 1)]),
        ([], []),
    ]
    assert final(node, out) == [("a", 5, 1, 2), ("a", 6, 6, 1), ("b", 4, 3, 2),
                                ("b", 9, 7, 1)]


# global ORDER BY v DESC LIMIT 2 OFFSET 1 (lower 2, upper 3)
OFFSET_BATCHES = [_batch([("x", 10, 1), ("x", 20, 2)]), _batch([("x", 15, 3)]),
                  _batch([("x", 30, 4), ("x", 5, 5)]), _batch([("x", 20, 6)])]


def test_global_top_n_with_offset_without_rank_column():
    node = make_node(pa.Table.from_batches(OFFSET_BATCHES), [], [("v", False)], 2, 3)
    out, _, _ = run(node, OFFSET_BATCHES)
    logs = [retractions_first(changes(node, step)) for step in out]
    assert [(sorted(r), sorted(a)) for r, a in logs] == [
        ([], [("+I", "x", 10, 1)]),  # 20 | 10
        ([], [("+I", "x", 15, 3)]),  # 20 | 15 10
        ([("-D", "x", 10, 1)], [("+I", "x", 20, 2)]),  # 30 | 20 15 | 10 5
        ([("-D", "x", 15, 3)], [("+I", "x", 20, 6)]),  # 30 | 20(id2) 20(id6) | 15
        ([], []),
    ]


def test_global_top_n_with_offset_and_rank_column():
    node = make_node(pa.Table.from_batches(OFFSET_BATCHES), [], [("v", False)], 2, 3,
                     rank=True)
    out, _, _ = run(node, OFFSET_BATCHES)
    logs = [retractions_first(changes(node, step)) for step in out]
    assert [(sorted(r), sorted(a)) for r, a in logs] == [
        ([], [("+I", "x", 10, 1, 2)]),
        ([("-U", "x", 10, 1, 2)], [("+I", "x", 10, 1, 3), ("+U", "x", 15, 3, 2)]),
        ([("-U", "x", 10, 1, 3), ("-U", "x", 15, 3, 2)],
         [("+U", "x", 15, 3, 3), ("+U", "x", 20, 2, 2)]),
        ([("-U", "x", 15, 3, 3)], [("+U", "x", 20, 6, 3)]),
        ([], []),
    ]
    assert final(node, out) == [("x", 20, 2, 2), ("x", 20, 6, 3)]


def test_top_n_survives_snapshot_and_restore():
    node = _topn_node(rank=True)
    whole, _, _ = run(node, TOPN_BATCHES)
    head, operator, _ = run(node, TOPN_BATCHES[:1], finish=False)
    restored, _ = open_operator(node)
    restored.restore_state(operator.snapshot_state(3))
    tail, _, _ = run(node, TOPN_BATCHES[1:], operator=restored)
    # partitions may come in another order within a batch's changelog; nothing else differs
    def per_step(out):
        logs = [retractions_first(changes(node, step)) for step in out]
        return [(sorted(r), sorted(a)) for r, a in logs]

    assert per_step(head + tail) == per_step(whole)


# -- re-chunking invariance against DuckDB -----------------------------------------------------

def _random_table(seed: int, n: int = 240) -> pa.Table:
    """k with NULLs, v with NULLs and many ties, ts with ties, id = arrival order."""
    rng = np.random.default_rng(seed)
    keys = rng.choice(np.array(["p", "q", "r", "s", ""], dtype=object), n)
    k = pa.array([None if x == "" else x for x in keys], pa.string())
    v = pa.array(rng.integers(0, 12, n), mask=rng.random(n) < 0.1)
    ts = rng.integers(0, 60, n)
    start = ts - ts % 20
    return pa.table({"k": k, "ts": pa.array(ts).cast(pa.timestamp("ms")), "v": v,
                     "ws": pa.array(start).cast(pa.timestamp("ms")),
                     "we": pa.array(start + 20).cast(pa.timestamp("ms")),
                     "id": pa.array(np.arange(n))})


def _chunks(table: pa.Table, seed: int) -> list[list[pa.RecordBatch]]:
    rng = np.random.default_rng(seed)
    random_cut = []
    start = 0
    while start < table.num_rows:
        size = int(rng.integers(1, 40))
        random_cut.append(table.slice(start, size).to_batches()[0])
        start += size
    return [table.to_batches(max_chunksize=1), table.to_batches(max_chunksize=17),
            [table.combine_chunks().to_batches()[0]], random_cut]


RANKED = ("SELECT {cols} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY {part} "
          "ORDER BY {order}) AS rn FROM t) WHERE rn BETWEEN {lower} AND {upper}")


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(("partition", "lower", "upper", "rank"), [
    (["k"], 1, 3, True), (["k"], 2, 4, False), ([], 1, 5, False), ([], 3, 6, True)])
def test_top_n_final_result_is_chunking_invariant_and_matches_duckdb(seed, partition, lower,
                                                                    upper, rank):
    table = _random_table(seed)
    node = make_node(table, partition, [("v", False)], lower, upper, rank=rank)
    cols = "k, ts, v, ws, we, id" + (", rn" if rank else "")
    part = ", ".join(partition) or "NULL"
    expected = rows(duck(RANKED.format(cols=cols, part=part, order="v DESC NULLS LAST, id",
                                       lower=lower, upper=upper), t=table))
    for chunks in _chunks(table, seed):
        out, _, _ = run(node, chunks)
        assert final(node, out) == expected


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize(("ascending", "order"), [(True, "ts, id"), (False, "ts DESC, id DESC")])
def test_rowtime_dedup_final_result_is_chunking_invariant_and_matches_duckdb(seed, ascending,
                                                                            order):
    table = _random_table(seed)
    node = make_node(table, ["k"], [("ts", ascending)], 1, 1, time_attribute="rowtime")
    expected = rows(duck(RANKED.format(cols="k, ts, v, ws, we, id", part="k", order=order,
                                       lower=1, upper=1), t=table))
    logs = []
    for chunks in _chunks(table, seed):
        out, _, _ = run(node, chunks)
        assert final(node, out) == expected
        logs.append(changes(node, [b for step in out for b in step]))
    assert all(log == logs[0] for log in logs)  # per-record semantics: one changelog


@pytest.mark.parametrize("seed", [5, 6])
def test_window_top_n_final_result_is_chunking_invariant_and_matches_duckdb(seed):
    table = _random_table(seed)
    node = make_node(table, ["k"], [("v", False)], 1, 2, rank=True, window=True)
    expected = rows(duck(RANKED.format(cols="k, ts, v, ws, we, id, rn", part="k, ws, we",
                                       order="v DESC NULLS LAST, id", lower=1, upper=2),
                         t=table))
    for chunks in _chunks(table, seed):
        out, _, _ = run(node, chunks)
        assert rows(pa.Table.from_batches([b for step in out for b in step])) == expected


# -- SQL, end to end in streaming mode ----------------------------------------------------------

# WATERMARK ts - 1 s, a watermark after every record: a@12 moves it to 11 s, so [0 s, 10 s)
# has fired when a@4 arrives (late for a window, but not for unwindowed operators)
CSV = """a,2026-01-01 00:00:01,5
a,2026-01-01 00:00:03,9
b,2026-01-01 00:00:02,4
a,2026-01-01 00:00:12,7
a,2026-01-01 00:00:04,9
b,2026-01-01 00:00:15,3
a,2026-01-01 00:00:19,2
a,2026-01-01 00:00:27,1
"""


@pytest.fixture
def session(tmp_path):
    import flowsql

    path = tmp_path / "t.csv"
    path.write_text(CSV)
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    session.sql("CREATE TABLE t (k STRING, ts TIMESTAMP(3), v BIGINT, "
                "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) "
                f"WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')")
    session.sql("SET 'pipeline.auto-watermark-interval' = '0'")
    return session


def _seconds(value: Any) -> int:
    return value.second


def _log(result: Any, columns: Sequence[str]) -> list[tuple[Any, ...]]:
    out = []
    for batch in result.stream():
        for row in batch.to_pylist():
            out.append((row["op"], *(_seconds(row[c]) if c == "ts" else row[c]
                                     for c in columns)))
    return out


def test_sql_window_top_n(session):
    result = session.sql(
        "SELECT k, ts, v, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, "
        "window_end, k ORDER BY v DESC) AS rn FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
        "INTERVAL '10' SECOND))) WHERE rn <= 2")
    assert sorted(_log(result, ["k", "ts", "v", "rn"])) == [
        ("+I", "a", 1, 5, 2), ("+I", "a", 3, 9, 1), ("+I", "a", 12, 7, 1),
        ("+I", "a", 19, 2, 2), ("+I", "a", 27, 1, 1), ("+I", "b", 2, 4, 1),
        ("+I", "b", 15, 3, 1)]


def test_sql_rowtime_deduplication_keep_last(session):
    result = session.sql(
        "SELECT k, ts, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) "
        "AS rn FROM t) WHERE rn = 1")
    # per record: a@4 is older than the stored a@12 and replaces nothing; keys may run on
    # different subtasks, so only the order within a key is fixed
    log = _log(result, ["k", "ts", "v"])
    assert [e for e in log if e[1] == "a"] == [
        ("+I", "a", 1, 5), ("-U", "a", 1, 5), ("+U", "a", 3, 9), ("-U", "a", 3, 9),
        ("+U", "a", 12, 7), ("-U", "a", 12, 7), ("+U", "a", 19, 2), ("-U", "a", 19, 2),
        ("+U", "a", 27, 1)]
    assert [e for e in log if e[1] == "b"] == [
        ("+I", "b", 2, 4), ("-U", "b", 2, 4), ("+U", "b", 15, 3)]


def test_sql_global_top_n_final_rows(session):
    result = session.sql("SELECT k, v FROM t ORDER BY v DESC LIMIT 3")
    assert sorted(result.to_arrow().to_pylist(), key=lambda r: r["v"]) == [
        {"k": "a", "v": 7}, {"k": "a", "v": 9}, {"k": "a", "v": 9}]
