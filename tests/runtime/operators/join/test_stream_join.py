"""Regular streaming joins: full changelogs checked by hand against Flink's
``StreamingJoinOperator`` semantics, and the materialized result of re-chunked,
interleaved inputs against DuckDB's join of the same rows.

Flink's order per input row: an accumulation first retracts the padded rows of outer
partners that were alone (``-D(NULLs, partner)``), then emits its joined rows; a
retraction first retracts its joined rows, then re-inserts padded partners that lost
their last match. Only ``+I`` and ``-D`` are emitted.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Call
from flowsql.planner.physical_streaming import StreamJoinExec
from flowsql.planner.schema import to_arrow_schema
from flowsql.runtime.changelog import (
    DELETE,
    INSERT,
    ROW_KIND,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    labels,
    materialize,
    row_kinds,
    with_row_kinds,
)
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.join.stream_join import StreamJoinOperator
from tests.harness.operators import duck, leaf, rows

N = None
LEFT = pa.table({"k": pa.array([], pa.int64()), "a": pa.array([], pa.string())})
RIGHT = pa.table({"k": pa.array([], pa.int64()), "b": pa.array([], pa.string())})
LEFT_NUM = pa.table({"k": pa.array([], pa.int64()), "a": pa.array([], pa.int64())})
RIGHT_NUM = pa.table({"k": pa.array([], pa.int64()), "b": pa.array([], pa.int64())})


def _join(kind: str, left: pa.Table = LEFT, right: pa.Table = RIGHT, keyed: bool = True,
          residual: str | None = None, updating: bool | None = None) -> StreamJoinExec:
    ln, _ = leaf(left)
    rn, _ = leaf(right)
    lkeys = (ln.schema[0].ref(),) if keyed else ()
    rkeys = (rn.schema[0].ref(),) if keyed else ()
    condition = None
    if residual is not None:  # "lt": left column 1 < right column 1
        condition = Call(residual, (ln.schema[1].ref(), rn.schema[1].ref()), T.BOOL)
    return StreamJoinExec(ln, rn, kind, lkeys, rkeys, condition,
                          kind != "inner" if updating is None else updating, 0.0)


def _batch(node: StreamJoinExec, input: int, data: list[tuple[Any, ...]],
           kinds: list[int] | None = None) -> pa.RecordBatch:
    schema = to_arrow_schema(node.inputs[input].schema)
    columns = [pa.array([r[i] for r in data], f.type) for i, f in enumerate(schema)]
    batch = pa.RecordBatch.from_arrays(columns, schema=schema)
    return batch if kinds is None else with_row_kinds(batch, np.array(kinds, np.int8))


def _run(node: StreamJoinExec, events: list[tuple[int, pa.RecordBatch]]
         ) -> list[pa.RecordBatch]:
    operator = StreamJoinOperator(node)
    operator.open(OperatorContext("join"))
    out: list[pa.RecordBatch] = []
    for input, batch in events:
        out.extend(operator.process_batch(input, batch))
    for input in (0, 1):
        out.extend(operator.end_input(input))
    operator.close()
    return out


def _changelog(node: StreamJoinExec, out: list[pa.RecordBatch]
               ) -> list[tuple[str, tuple[Any, ...]]]:
    width = len(node.schema)
    log: list[tuple[str, tuple[Any, ...]]] = []
    for batch in out:
        columns = [batch.column(i).to_pylist() for i in range(width)]
        for kind, row in zip(labels(row_kinds(batch, width)), zip(*columns)):
            log.append((kind, row))
    return log


def _final(node: StreamJoinExec, out: list[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    return rows(materialize(out, to_arrow_schema(node.schema)))


def test_inner_insert_only_late_partners_multiple_matches_and_null_keys():
    node = _join("inner")
    out = _run(node, [
        (0, _batch(node, 0, [(1, "a1"), (2, "a2"), (N, "an")])),
        (1, _batch(node, 1, [(1, "b1"), (1, "b1x"), (N, "bn"), (3, "b3")])),
        (0, _batch(node, 0, [(1, "a1b"), (3, "a3"), (N, "an2")])),
    ])
    assert all(ROW_KIND not in b.schema.names for b in out)  # insert-only output
    assert _changelog(node, out) == [
        ("+I", (1, "a1", 1, "b1")), ("+I", (1, "a1", 1, "b1x")),
        ("+I", (1, "a1b", 1, "b1")), ("+I", (1, "a1b", 1, "b1x")),
        ("+I", (3, "a3", 3, "b3")),
    ]


def test_left_join_padding_transitions():
    node = _join("left")
    out = _run(node, [
        (0, _batch(node, 0, [(1, "a1"), (2, "a2"), (N, "an")])),
        # two partners of a1 in one batch: its padded row is retracted once, first
        (1, _batch(node, 1, [(1, "b1"), (1, "b1x"), (N, "bn"), (3, "b3")])),
        (0, _batch(node, 0, [(3, "a3"), (4, "a4")])),
        # a1 loses both partners in one batch: padded again after the last one
        (1, _batch(node, 1, [(1, "b1"), (1, "b1x")], [DELETE, DELETE])),
        (0, _batch(node, 0, [(2, "a2"), (N, "an")], [DELETE, DELETE])),
    ])
    assert _changelog(node, out) == [
        ("+I", (1, "a1", N, N)), ("+I", (2, "a2", N, N)), ("+I", (N, "an", N, N)),
        ("-D", (1, "a1", N, N)), ("+I", (1, "a1", 1, "b1")), ("+I", (1, "a1", 1, "b1x")),
        ("+I", (3, "a3", 3, "b3")), ("+I", (4, "a4", N, N)),
        ("-D", (1, "a1", 1, "b1")), ("-D", (1, "a1", 1, "b1x")), ("+I", (1, "a1", N, N)),
        ("-D", (2, "a2", N, N)), ("-D", (N, "an", N, N)),
    ]
    assert _final(node, out) == [(1, "a1", N, N), (3, "a3", 3, "b3"), (4, "a4", N, N)]


def test_right_join_duplicate_rows_count_as_a_multiset():
    node = _join("right")
    out = _run(node, [
        (1, _batch(node, 1, [(1, "b1"), (N, "bn")])),
        (0, _batch(node, 0, [(1, "a1"), (1, "a1")])),
        (1, _batch(node, 1, [(1, "b2")])),
        (0, _batch(node, 0, [(1, "a1")], [DELETE])),
        (0, _batch(node, 0, [(1, "a1")], [DELETE])),
    ])
    assert _changelog(node, out) == [
        ("+I", (N, N, 1, "b1")), ("+I", (N, N, N, "bn")),
        ("-D", (N, N, 1, "b1")), ("+I", (1, "a1", 1, "b1")), ("+I", (1, "a1", 1, "b1")),
        ("+I", (1, "a1", 1, "b2")), ("+I", (1, "a1", 1, "b2")),
        ("-D", (1, "a1", 1, "b1")), ("-D", (1, "a1", 1, "b2")),
        ("-D", (1, "a1", 1, "b1")), ("-D", (1, "a1", 1, "b2")),
        ("+I", (N, N, 1, "b1")), ("+I", (N, N, 1, "b2")),
    ]
    assert _final(node, out) == [(N, N, 1, "b1"), (N, N, 1, "b2"), (N, N, N, "bn")]


def test_full_join_residual_and_updating_input():
    node = _join("full", LEFT_NUM, RIGHT_NUM, residual="lt")  # ON l.k = r.k AND l.a < r.b
    out = _run(node, [
        (0, _batch(node, 0, [(1, 5)])),
        (1, _batch(node, 1, [(1, 3), (1, 7)])),
        # an update of the left row from 5 to 2: now below both right rows
        (0, _batch(node, 0, [(1, 5), (1, 2)], [UPDATE_BEFORE, UPDATE_AFTER])),
        (1, _batch(node, 1, [(1, 3)], [DELETE])),
        (1, _batch(node, 1, [(2, 9), (2, 9)], [INSERT, DELETE])),
    ])
    assert _changelog(node, out) == [
        ("+I", (1, 5, N, N)),
        ("+I", (N, N, 1, 3)), ("-D", (1, 5, N, N)), ("+I", (1, 5, 1, 7)),
        ("-D", (1, 5, 1, 7)), ("+I", (N, N, 1, 7)),
        ("-D", (N, N, 1, 3)), ("-D", (N, N, 1, 7)), ("+I", (1, 2, 1, 3)), ("+I", (1, 2, 1, 7)),
        ("-D", (1, 2, 1, 3)),
        ("+I", (N, N, 2, 9)), ("-D", (N, N, 2, 9)),
    ]
    assert _final(node, out) == [(1, 2, 1, 7)]


def test_inner_join_of_updating_input_emits_deletes():
    node = _join("inner", LEFT_NUM, RIGHT_NUM, updating=True)
    out = _run(node, [
        (1, _batch(node, 1, [(1, 10), (2, 20)])),
        (0, _batch(node, 0, [(1, 1), (1, 1), (2, 2)], [INSERT, UPDATE_BEFORE, UPDATE_AFTER])),
        (1, _batch(node, 1, [(2, 20), (2, 21)], [UPDATE_BEFORE, UPDATE_AFTER])),
    ])
    assert _changelog(node, out) == [
        ("+I", (1, 1, 1, 10)), ("-D", (1, 1, 1, 10)), ("+I", (2, 2, 2, 20)),
        ("-D", (2, 2, 2, 20)), ("+I", (2, 2, 2, 21)),
    ]
    assert _final(node, out) == [(2, 2, 2, 21)]


def test_join_without_keys_uses_the_residual_only():
    node = _join("left", LEFT_NUM, RIGHT_NUM, keyed=False, residual="lt")
    out = _run(node, [
        (0, _batch(node, 0, [(1, 5), (2, 50)])),
        (1, _batch(node, 1, [(9, 10), (8, 6)])),
    ])
    assert _changelog(node, out) == [
        ("+I", (1, 5, N, N)), ("+I", (2, 50, N, N)),
        ("-D", (1, 5, N, N)), ("+I", (1, 5, 9, 10)), ("+I", (1, 5, 8, 6)),
    ]


def test_insert_only_plan_rejects_retractions():
    node = _join("inner")
    with pytest.raises(ExecutionError, match="retraction"):
        _run(node, [(0, _batch(node, 0, [(1, "a")], [DELETE]))])


def test_snapshot_restore_continues_the_changelog():
    node = _join("left")
    first = StreamJoinOperator(node)
    first.open(OperatorContext("join"))
    list(first.process_batch(0, _batch(node, 0, [(1, "a1"), (1, "a1")])))
    snapshot = first.snapshot_state(1)
    second = StreamJoinOperator(node)
    second.open(OperatorContext("join"))
    second.restore_state(snapshot)
    out = list(second.process_batch(1, _batch(node, 1, [(1, "b")])))
    assert _changelog(node, out) == [
        ("-D", (1, "a1", N, N)), ("-D", (1, "a1", N, N)),
        ("+I", (1, "a1", 1, "b")), ("+I", (1, "a1", 1, "b")),
    ]


# -- re-chunking invariance against DuckDB ----------------------------------------------

SQL_KIND = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN"}


def _random_side(rng: random.Random, n: int, name: str) -> pa.Table:
    keys = [rng.choice([1, 2, 3, 4, None]) for _ in range(n)]
    values = [rng.randrange(10) for _ in range(n)]
    return pa.table({"k": pa.array(keys, pa.int64()), name: pa.array(values, pa.int64())})


def _events(rng: random.Random, node: StreamJoinExec, left: pa.Table, right: pa.Table,
            deleted: tuple[pa.Table, pa.Table] | None
            ) -> list[tuple[int, pa.RecordBatch]]:
    """Both inputs cut at random sizes and interleaved at random; deletions (if any) of
    each side follow that side's insertions."""
    queues: list[list[pa.RecordBatch]] = []
    for input, table in enumerate((left, right)):
        parts = []
        kinds = [INSERT] * table.num_rows
        if deleted is not None:
            kinds += [DELETE] * deleted[input].num_rows
            table = pa.concat_tables([table, deleted[input]])
        start = 0
        while start < table.num_rows:
            size = rng.randint(1, 5)
            chunk = table.slice(start, size).combine_chunks().to_batches()[0]
            schema = to_arrow_schema(node.inputs[input].schema)
            chunk = pa.RecordBatch.from_arrays(chunk.columns, schema=schema)
            if deleted is not None:
                chunk = with_row_kinds(chunk, np.array(kinds[start:start + size], np.int8))
            parts.append(chunk)
            start += size
        queues.append(parts)
    events: list[tuple[int, pa.RecordBatch]] = []
    while queues[0] or queues[1]:
        input = rng.choice([i for i in (0, 1) if queues[i]])
        events.append((input, queues[input].pop(0)))
    return events


@pytest.mark.parametrize("kind", list(SQL_KIND))
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("retract", [False, True])
def test_rechunked_final_result_matches_duckdb(kind, seed, retract):
    rng = random.Random(seed * 7 + len(kind))
    left, right = _random_side(rng, 14, "a"), _random_side(rng, 12, "b")
    node = _join(kind, LEFT_NUM, RIGHT_NUM, residual="lt",
                 updating=True if retract else None)
    deleted = None
    if retract:  # delete a random subset of each side after its insertions
        deleted = (left.take(sorted(rng.sample(range(left.num_rows), 5))),
                   right.take(sorted(rng.sample(range(right.num_rows), 4))))
    out = _run(node, _events(rng, node, left, right, deleted))
    if deleted is not None:
        left, right = _minus(left, deleted[0]), _minus(right, deleted[1])
    expected = duck(f"SELECT * FROM l {SQL_KIND[kind]} r ON l.k = r.k AND l.a < r.b",
                    l=left, r=right)
    assert _final(node, out) == rows(expected)


def _minus(table: pa.Table, removed: pa.Table) -> pa.Table:
    remaining = [tuple(r.values()) for r in table.to_pylist()]
    for row in (tuple(r.values()) for r in removed.to_pylist()):
        remaining.remove(row)
    return pa.table([pa.array([r[i] for r in remaining], table.schema.field(i).type)
                     for i in range(table.num_columns)], names=table.column_names)


# -- end to end: SQL in streaming mode --------------------------------------------------

def _sql_tables(tmp_path: Any) -> Any:
    import flowsql

    (tmp_path / "l.csv").write_text("1,2024-01-01 00:00:10,10\n2,2024-01-01 00:00:12,12\n"
                                    ",2024-01-01 00:00:13,13\n4,2024-01-01 00:00:14,14\n")
    (tmp_path / "r.csv").write_text("1,2024-01-01 00:00:11,11\n1,2024-01-01 00:00:12,5\n"
                                    "3,2024-01-01 00:00:13,13\n,2024-01-01 00:00:14,14\n")
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    for name, column in (("l", "a"), ("r", "b")):
        session.sql(f"CREATE TABLE {name} (k BIGINT, ts TIMESTAMP(3), {column} BIGINT, "
                    "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ("
                    f"'connector' = 'filesystem', 'path' = '{tmp_path / (name + '.csv')}', "
                    "'format' = 'csv')")
    session.sql("SET 'pipeline.auto-watermark-interval' = '0'")
    return session


def test_sql_full_join_in_streaming_mode(tmp_path):
    session = _sql_tables(tmp_path)
    query = "SELECT l.k, l.a, r.k, r.b FROM l FULL JOIN r ON l.k = r.k AND l.a < r.b"
    assert "StreamJoin[full" in session.sql(query).explain()
    ops = {op for b in session.sql(query).stream() for op in b.column(0).to_pylist()}
    assert ops <= {"+I", "-D"} and "+I" in ops
    assert rows(session.sql(query).to_arrow()) == rows(pa.table({
        "k": [1, 2, N, 4, N, N, N], "a": [10, 12, 13, 14, N, N, N],
        "k2": [1, N, N, N, 1, 3, N], "b": [11, N, N, N, 5, 13, 14]}))


def _stored_rows(operator: StreamJoinOperator, input: int) -> list[tuple[Any, ...]]:
    """(key, data columns..., count) of every stored row of one side."""
    table = operator._sides[input].rows
    names = [*operator._sides[input].data_names, "$count"]
    return sorted(zip(*(table.column(n).to_pylist() for n in names)), key=repr)


def test_equal_rows_of_later_batches_and_restores_share_one_stored_row():
    value, other = "a1", "a2"
    node = _join("inner", updating=True)
    first = StreamJoinOperator(node)
    first.open(OperatorContext("join"))
    list(first.process_batch(0, _batch(node, 0, [(1, value), (2, value)])))
    list(first.process_batch(0, _batch(node, 0, [(1, value), (1, other)])))
    assert _stored_rows(first, 0) == sorted([(1, value, 2), (2, value, 1), (1, other, 1)],
                                            key=repr)
    second = StreamJoinOperator(node)
    second.open(OperatorContext("join"))
    second.restore_state(first.snapshot_state(1))
    list(second.process_batch(0, _batch(node, 0, [(2, value), (1, value)], [DELETE, INSERT])))
    assert _stored_rows(second, 0) == sorted([(1, value, 3), (1, other, 1)], key=repr)
    out = list(second.process_batch(1, _batch(node, 1, [(1, "b")])))
    assert sorted(_changelog(node, out), key=repr) == sorted(
        [("+I", (1, value, 1, "b"))] * 3 + [("+I", (1, other, 1, "b"))], key=repr)
