"""Changelog GROUP BY over a stream, with full changelogs checked by hand against Flink's
GroupAggFunction semantics (per record: +I for a group's first result, -U/+U when it
changes, nothing when it does not, -D when the group loses its last row), and the final
materialized result against DuckDB for randomly re-chunked inputs."""

from __future__ import annotations

import dataclasses
import decimal
import random
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall
from flowsql.planner.physical import ValuesExec
from flowsql.planner.physical_streaming import GroupAggregateExec
from flowsql.planner.schema import Field, to_arrow_schema
from flowsql.runtime.changelog import (
    DELETE,
    INSERT,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    labels,
    materialize,
    row_kinds,
    with_row_kinds,
)
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.aggregate.changelog_group_aggregate import GroupAggregateOperator
from tests.harness.operators import assert_rows, duck

D = decimal.Decimal
KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}
Agg = tuple[str, int | None, pa.DataType, bool]  # name, argument column, result type, distinct


def _node(schema: pa.Schema, groups: Sequence[int], aggs: Sequence[Agg]) -> GroupAggregateExec:
    fields = tuple(Field.fresh(f.name, f.type) for f in schema)
    source = ValuesExec(fields, (), 1.0)
    refs = [f.ref() for f in fields]
    calls = tuple(AggCall(name, (refs[col],) if col is not None else (), dtype, distinct)
                  for name, col, dtype, distinct in aggs)
    agg_fields = tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))
    return GroupAggregateExec(source, tuple(refs[i] for i in groups),
                              tuple(fields[i] for i in groups), calls, agg_fields, 1.0)


def _open(node: GroupAggregateExec, settings: dict[str, str] | None = None
          ) -> GroupAggregateOperator:
    operator = GroupAggregateOperator(node)
    operator.open(OperatorContext("group", settings or {}))
    return operator


def _batches(schema: pa.Schema, rows: Sequence[tuple[Any, ...]], size: int,
             kinds: Sequence[str] | None = None) -> list[pa.RecordBatch]:
    table = pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows], schema=schema)
    out = []
    for start in range(0, len(rows), size):
        batch = table.slice(start, size).combine_chunks().to_batches()[0]
        if kinds is not None:
            batch = with_row_kinds(batch, [KINDS[k] for k in kinds[start:start + size]])
        out.append(batch)
    return out


def _changelog(node: GroupAggregateExec, batches: Sequence[pa.RecordBatch],
               settings: dict[str, str] | None = None) -> list[tuple[Any, ...]]:
    operator = _open(node, settings)
    out = [b for batch in batches for b in operator.process_batch(0, batch)]
    out.extend(operator.end_input(0))
    return _rows(node, out)


def _rows(node: GroupAggregateExec, out: Sequence[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    width = len(node.schema)
    result: list[tuple[Any, ...]] = []
    for batch in out:
        assert batch.num_columns == width + 1  # always updating
        kinds = labels(row_kinds(batch, width))
        columns = [batch.column(i).to_pylist() for i in range(width)]
        result.extend((kind, *(c[i] for c in columns)) for i, kind in enumerate(kinds))
    return result


KV = pa.schema([("k", pa.string()), ("v", pa.int64())])
KV_ROWS = [("a", 1), ("b", 2), ("a", 3), (None, None), ("a", 1), ("b", 5), ("a", None)]
ALL_AGGS: list[Agg] = [("count_star", None, T.INT64, False), ("count", 1, T.INT64, False),
                       ("sum", 1, T.INT64, False), ("min", 1, T.INT64, False),
                       ("max", 1, T.INT64, False), ("avg", 1, T.FLOAT64, False)]


@pytest.mark.parametrize("size", [1, 2, 3, len(KV_ROWS)])
def test_per_record_changelog_does_not_depend_on_batching(size: int) -> None:
    node = _node(KV, [0], ALL_AGGS)
    # (k, count(*), count(v), sum(v), min(v), max(v), avg(v)); NULL key is one group
    assert _changelog(node, _batches(KV, KV_ROWS, size)) == [
        ("+I", "a", 1, 1, 1, 1, 1, 1.0),
        ("+I", "b", 1, 1, 2, 2, 2, 2.0),
        ("-U", "a", 1, 1, 1, 1, 1, 1.0), ("+U", "a", 2, 2, 4, 1, 3, 2.0),
        ("+I", None, 1, 0, None, None, None, None),
        ("-U", "a", 2, 2, 4, 1, 3, 2.0), ("+U", "a", 3, 3, 5, 1, 3, 5 / 3),
        ("-U", "b", 1, 1, 2, 2, 2, 2.0), ("+U", "b", 2, 2, 7, 2, 5, 3.5),
        ("-U", "a", 3, 3, 5, 1, 3, 5 / 3), ("+U", "a", 4, 3, 5, 1, 3, 5 / 3),
    ]


@pytest.mark.parametrize("size", [1, 2, 5])
def test_unchanged_result_emits_nothing(size: int) -> None:
    node = _node(KV, [0], [("max", 1, T.INT64, False)])
    rows = [("a", 1), ("a", 3), ("a", 1), ("a", 2), ("a", 3)]
    assert _changelog(node, _batches(KV, rows, size)) == [
        ("+I", "a", 1), ("-U", "a", 1), ("+U", "a", 3)]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_global_count_star(size: int) -> None:
    node = _node(KV, [], [("count_star", None, T.INT64, False)])
    assert _changelog(node, _batches(KV, [("a", 1), ("b", 2), ("c", 3)], size)) == [
        ("+I", 1), ("-U", 1), ("+U", 2), ("-U", 2), ("+U", 3)]


def test_global_aggregate_over_nulls_only() -> None:
    node = _node(KV, [], [("count", 1, T.INT64, False), ("sum", 1, T.INT64, False),
                          ("min", 1, T.INT64, False), ("avg", 1, T.FLOAT64, False)])
    rows = [("a", None), ("b", None), ("c", 4)]
    # the second NULL changes nothing: count(v) stays 0 and the others stay NULL
    assert _changelog(node, _batches(KV, rows, 2)) == [
        ("+I", 0, None, None, None),
        ("-U", 0, None, None, None), ("+U", 1, 4, 4, 4.0)]


NULL_KEYS = pa.schema([("k1", pa.int32()), ("k2", pa.string()), ("v", pa.float64())])


@pytest.mark.parametrize("size", [1, 2, 6])
def test_null_keys_in_composite_keys(size: int) -> None:
    node = _node(NULL_KEYS, [0, 1], [("sum", 2, T.FLOAT64, False),
                                     ("count", 2, T.INT64, False)])
    rows = [(None, "x", 1.5), (None, None, None), (1, None, 2.0), (None, "x", None),
            (None, None, 0.25), (1, None, 2.0)]
    assert _changelog(node, _batches(NULL_KEYS, rows, size)) == [
        ("+I", None, "x", 1.5, 1),
        ("+I", None, None, None, 0),
        ("+I", 1, None, 2.0, 1),
        # NULL value: sum and count unchanged -> nothing
        ("-U", None, None, None, 0), ("+U", None, None, 0.25, 1),
        ("-U", 1, None, 2.0, 1), ("+U", 1, None, 4.0, 2),
    ]


@pytest.mark.parametrize("size", [1, 2, 5])
def test_distinct_count_sum_avg(size: int) -> None:
    node = _node(KV, [0], [("count", 1, T.INT64, True), ("sum", 1, T.INT64, True),
                           ("avg", 1, T.FLOAT64, True), ("count_star", None, T.INT64, False)])
    rows = [("a", 1), ("a", 1), ("a", 2), ("b", None), ("a", None)]
    assert _changelog(node, _batches(KV, rows, size)) == [
        ("+I", "a", 1, 1, 1.0, 1),
        ("-U", "a", 1, 1, 1.0, 1), ("+U", "a", 1, 1, 1.0, 2),
        ("-U", "a", 1, 1, 1.0, 2), ("+U", "a", 2, 3, 1.5, 3),
        ("+I", "b", 0, None, None, 1),
        ("-U", "a", 2, 3, 1.5, 3), ("+U", "a", 2, 3, 1.5, 4),
    ]


@pytest.mark.parametrize("size", [1, 2, 6])
def test_distinct_under_retraction(size: int) -> None:
    node = _node(KV, [0], [("count", 1, T.INT64, True), ("sum", 1, T.INT64, True)])
    rows = [("a", 1), ("a", 1), ("a", 2), ("a", 1), ("a", 1), ("a", 2)]
    kinds = ["+I", "+I", "+I", "-D", "-D", "-U"]
    assert _changelog(node, _batches(KV, rows, size, kinds)) == [
        ("+I", "a", 1, 1),
        # the second 1 is a duplicate, and retracting one of the two 1s leaves one
        ("-U", "a", 1, 1), ("+U", "a", 2, 3),
        ("-U", "a", 2, 3), ("+U", "a", 1, 2),
        ("-D", "a", 1, 2),
    ]


RETRACT_ROWS = [("a", 5), ("a", 3), ("a", 7), ("a", 7), ("a", 9), ("a", 3), ("b", 1),
                ("a", 5), ("a", 9), ("a", 4), ("b", 1)]
RETRACT_KINDS = ["+I", "+I", "+I", "-U", "+U", "-D", "+I", "-D", "-D", "+I", "-D"]


@pytest.mark.parametrize("size", [1, 2, 3, len(RETRACT_ROWS)])
def test_retracting_input_min_max_and_delete(size: int) -> None:
    node = _node(KV, [0], [("count_star", None, T.INT64, False), ("min", 1, T.INT64, False),
                           ("max", 1, T.INT64, False), ("sum", 1, T.INT64, False)])
    assert _changelog(node, _batches(KV, RETRACT_ROWS, size, RETRACT_KINDS)) == [
        ("+I", "a", 1, 5, 5, 5),
        ("-U", "a", 1, 5, 5, 5), ("+U", "a", 2, 3, 5, 8),
        ("-U", "a", 2, 3, 5, 8), ("+U", "a", 3, 3, 7, 15),
        ("-U", "a", 3, 3, 7, 15), ("+U", "a", 2, 3, 5, 8),     # max 7 retracted
        ("-U", "a", 2, 3, 5, 8), ("+U", "a", 3, 3, 9, 17),
        ("-U", "a", 3, 3, 9, 17), ("+U", "a", 2, 5, 9, 14),    # min 3 retracted
        ("+I", "b", 1, 1, 1, 1),
        ("-U", "a", 2, 5, 9, 14), ("+U", "a", 1, 9, 9, 9),
        ("-D", "a", 1, 9, 9, 9),                               # group emptied
        ("+I", "a", 1, 4, 4, 4),                               # starts afresh
        ("-D", "b", 1, 1, 1, 1),
    ]


@pytest.mark.parametrize("size", [1, 2, 4])
def test_retracting_a_duplicate_extreme_keeps_it(size: int) -> None:
    node = _node(KV, [0], [("max", 1, T.INT64, False)])
    rows = [("a", 5), ("a", 5), ("a", 5), ("a", 5)]
    kinds = ["+I", "+I", "-D", "-D"]
    assert _changelog(node, _batches(KV, rows, size, kinds)) == [
        ("+I", "a", 5), ("-D", "a", 5)]


def test_retraction_without_rows_is_an_error() -> None:
    node = _node(KV, [0], [("count_star", None, T.INT64, False)])
    with pytest.raises(ExecutionError, match="retraction"):
        _changelog(node, _batches(KV, [("a", 1)], 1, ["-D"]))


DEC = pa.schema([("k", pa.string()), ("m", pa.decimal128(10, 2))])


@pytest.mark.parametrize("size", [1, 3])
def test_decimal_sum_stays_exact_decimal(size: int) -> None:
    node = _node(DEC, [0], [("sum", 1, pa.decimal128(38, 2), False),
                            ("avg", 1, T.FLOAT64, False), ("max", 1, pa.decimal128(10, 2),
                                                            False)])
    rows = [("a", D("0.10")), ("a", D("0.20")), ("a", D("99999999.99"))]
    operator = _open(node)
    out = [b for batch in _batches(DEC, rows, size) for b in operator.process_batch(0, batch)]
    assert all(b.schema.field(1).type == pa.decimal128(38, 2) for b in out)
    assert _rows(node, out) == [
        ("+I", "a", D("0.10"), 0.1, D("0.10")),
        ("-U", "a", D("0.10"), 0.1, D("0.10")), ("+U", "a", D("0.30"), 0.15, D("0.20")),
        ("-U", "a", D("0.30"), 0.15, D("0.20")),
        ("+U", "a", D("100000000.29"), 100000000.29 / 3, D("99999999.99")),
    ]


def test_mini_batch_emits_one_change_per_group_and_batch() -> None:
    node = _node(KV, [0], ALL_AGGS)
    settings = {"table.exec.mini-batch.enabled": "true"}
    # batches [a1 b2 a3] [NULL a1 b5] [a NULL]; groups in order of first appearance
    assert _changelog(node, _batches(KV, KV_ROWS, 3), settings) == [
        ("+I", "a", 2, 2, 4, 1, 3, 2.0),
        ("+I", "b", 1, 1, 2, 2, 2, 2.0),
        ("+I", None, 1, 0, None, None, None, None),
        ("-U", "a", 2, 2, 4, 1, 3, 2.0), ("+U", "a", 3, 3, 5, 1, 3, 5 / 3),
        ("-U", "b", 1, 1, 2, 2, 2, 2.0), ("+U", "b", 2, 2, 7, 2, 5, 3.5),
        ("-U", "a", 3, 3, 5, 1, 3, 5 / 3), ("+U", "a", 4, 3, 5, 1, 3, 5 / 3),
    ]


def test_mini_batch_with_retractions() -> None:
    node = _node(KV, [0], [("count_star", None, T.INT64, False), ("max", 1, T.INT64, False)])
    settings = {"table.exec.mini-batch.enabled": "true"}
    rows = [("a", 1), ("b", 2), ("c", 3),
            ("a", 1), ("c", 3), ("c", 4), ("b", 2), ("b", 2), ("d", 1), ("d", 1)]
    kinds = ["+I", "+I", "+I",
             "-D", "-U", "+U", "-D", "+I", "+I", "-D"]
    batches = _batches(KV, rows[:3], 3, kinds[:3]) + _batches(KV, rows[3:], 7, kinds[3:])
    # second batch: a deleted; c updated 3 -> 4; b removed and re-added (same result: no
    # change); d inserted and deleted within the batch (nothing)
    assert _changelog(node, batches, settings) == [
        ("+I", "a", 1, 1), ("+I", "b", 1, 2), ("+I", "c", 1, 3),
        ("-D", "a", 1, 1),
        ("-U", "c", 1, 3), ("+U", "c", 1, 4),
    ]


def test_snapshot_and_restore_continue_the_changelog() -> None:
    node = _node(KV, [0], ALL_AGGS + [("count", 1, T.INT64, True)])
    batches = _batches(KV, KV_ROWS, 2)
    whole = _changelog(node, batches)
    first = _open(node)
    out = [b for batch in batches[:2] for b in first.process_batch(0, batch)]
    snapshot = first.snapshot_state(1)
    second = _open(node)
    second.restore_state(snapshot)
    out += [b for batch in batches[2:] for b in second.process_batch(0, batch)]
    assert _rows(node, out) == whole


RANDOM = pa.schema([("k1", pa.string()), ("k2", pa.int64()), ("i", pa.int32()),
                    ("m", pa.decimal128(12, 3)), ("f", pa.float64()), ("s", pa.string())])
RANDOM_AGGS: list[tuple[str, int | None, pa.DataType, bool, str]] = [
    ("count_star", None, T.INT64, False, "count(*)"),
    ("count", 2, T.INT64, False, "count(i)"),
    ("sum", 2, T.INT64, False, "sum(i)"),
    ("avg", 2, T.FLOAT64, False, "avg(i)"),
    ("sum", 3, pa.decimal128(38, 3), False, "sum(m)"),
    ("min", 3, pa.decimal128(12, 3), False, "min(m)"),
    ("max", 4, T.FLOAT64, False, "max(f)"),
    ("sum", 4, T.FLOAT64, False, "sum(f)"),
    ("avg", 4, T.FLOAT64, True, "avg(DISTINCT f)"),
    ("min", 5, T.STRING, False, "min(s)"),
    ("max", 5, T.STRING, False, "max(s)"),
    ("count", 2, T.INT64, True, "count(DISTINCT i)"),
    ("sum", 2, T.INT64, True, "sum(DISTINCT i)"),
    ("avg", 3, T.FLOAT64, True, "avg(DISTINCT m)"),
]


def _random_rows(rng: random.Random, n: int) -> list[tuple[Any, ...]]:
    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.15 else value

    return [(maybe(rng.choice("xyz")), maybe(rng.randint(0, 3)), maybe(rng.randint(-5, 5)),
             maybe(D(rng.randint(-9999, 9999)).scaleb(-3)), maybe(rng.choice([0.5, 1.25, -2.0])),
             maybe(rng.choice(["p", "q", "rr", ""]))) for _ in range(n)]


def _random_chunks(rng: random.Random, table: pa.Table, kinds: list[int]
                   ) -> list[pa.RecordBatch]:
    out, start = [], 0
    while start < table.num_rows:
        size = rng.randint(1, 12)
        part = table.slice(start, size).combine_chunks().to_batches()[0]
        chunk_kinds = kinds[start:start + size]
        if any(k != INSERT for k in kinds) or rng.random() < 0.5:
            part = with_row_kinds(part, chunk_kinds)
        out.append(part)
        start += size
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("retract", [False, True])
@pytest.mark.parametrize("mini_batch", [False, True])
def test_random_chunking_materializes_to_duckdb(seed: int, retract: bool,
                                                mini_batch: bool) -> None:
    rng = random.Random(seed)
    rows = _random_rows(rng, 120)
    kept = rows
    entries: list[tuple[int, int]] = [(i, INSERT) for i in range(len(rows))]
    if retract:
        # retract a random subset later in the log (each after its own insertion)
        victims = rng.sample(range(len(rows)), 50)
        kept = [r for i, r in enumerate(rows) if i not in set(victims)]
        for victim in victims:
            at = rng.randint(entries.index((victim, INSERT)) + 1, len(entries))
            entries.insert(at, (victim, rng.choice([UPDATE_BEFORE, DELETE])))
    log = [rows[i] for i, _ in entries]
    kinds = [kind for _, kind in entries]
    table = pa.Table.from_pylist([dict(zip(RANDOM.names, r)) for r in log], schema=RANDOM)
    expected_table = pa.Table.from_pylist([dict(zip(RANDOM.names, r)) for r in kept],
                                          schema=RANDOM)
    groups = [[], [0], [0, 1]][seed % 3]
    node = _node(RANDOM, groups, [a[:4] for a in RANDOM_AGGS])
    settings = {"table.exec.mini-batch.enabled": str(mini_batch).lower()}
    operator = _open(node, settings)
    out = [b for batch in _random_chunks(rng, table, kinds)
           for b in operator.process_batch(0, batch)]
    actual = materialize(out, to_arrow_schema(node.schema))
    names = [RANDOM.names[i] for i in groups]
    select = ", ".join([*names, *(a[4] for a in RANDOM_AGGS)])
    sql = f"SELECT {select} FROM t" + (f" GROUP BY {', '.join(names)}" if names else "")
    expected = duck(sql, t=expected_table)
    if not groups and not kept:
        expected = expected.slice(0, 0)  # a streaming global aggregate over nothing is empty
    assert actual.schema.types == [RANDOM.field(i).type for i in groups] + [
        a[2] for a in RANDOM_AGGS]
    assert_rows(actual, expected)


@pytest.mark.parametrize("seed", range(6))
def test_insert_only_input_keeps_min_max_without_values(seed: int) -> None:
    """Over an input the plan marks insert-only, MIN/MAX keep only the extreme (no values
    table; DISTINCT aggregates still keep theirs) and the result is DuckDB's; a retraction
    reaching such an operator is an error, not a wrong extreme."""
    rng = random.Random(seed)
    rows = _random_rows(rng, 120)
    table = pa.Table.from_pylist([dict(zip(RANDOM.names, r)) for r in rows], schema=RANDOM)
    groups = [[], [0], [0, 1]][seed % 3]
    node = dataclasses.replace(_node(RANDOM, groups, [a[:4] for a in RANDOM_AGGS]),
                               insert_only_input=True)
    operator = _open(node)
    assert sorted(operator._values) == [i for i, a in enumerate(RANDOM_AGGS) if a[3]]
    out = [b for batch in _random_chunks(rng, table, [INSERT] * len(rows))
           for b in operator.process_batch(0, batch)]
    actual = materialize(out, to_arrow_schema(node.schema))
    names = [RANDOM.names[i] for i in groups]
    select = ", ".join([*names, *(a[4] for a in RANDOM_AGGS)])
    sql = f"SELECT {select} FROM t" + (f" GROUP BY {', '.join(names)}" if names else "")
    assert_rows(actual, duck(sql, t=table))
    retraction = with_row_kinds(table.slice(0, 1).combine_chunks().to_batches()[0], [DELETE])
    with pytest.raises(ExecutionError, match="insert-only"):
        operator.process_batch(0, retraction)


def test_sql_plans_min_max_over_insert_only_input_without_values() -> None:
    """The planner marks a GROUP BY over a plain source insert-only and one over another
    GROUP BY's changelog not."""
    import flowsql
    from flowsql.session.execute.planning import plan_query
    from flowsql.sql.statement_parser import parse_one

    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    session.sql("CREATE TABLE src (k BIGINT, v BIGINT) WITH ('connector' = 'datagen', "
                "'number-of-rows' = '10')")

    def marks(sql: str) -> list[bool]:
        _, _, plan = plan_query(session, parse_one(sql))  # type: ignore[arg-type]
        found, stack = [], [plan]
        while stack:
            node = stack.pop()
            if isinstance(node, GroupAggregateExec):
                found.append(node.insert_only_input)
            stack.extend(node.inputs)
        return sorted(found)

    try:
        assert marks("SELECT k, MAX(v) FROM src GROUP BY k") == [True]
        assert marks("SELECT c, MAX(k) FROM (SELECT k, COUNT(*) AS c FROM src GROUP BY k) "
                     "GROUP BY c") == [False, True]
    finally:
        session.close()


def test_sql_group_by_streams_a_changelog(tmp_path: Any) -> None:
    import flowsql

    (tmp_path / "t.csv").write_text("a,1,2024-01-01 00:00:01\nb,2,2024-01-01 00:00:02\n"
                                    "a,3,2024-01-01 00:00:03\nc,5,2024-01-01 00:00:04\n")
    session = flowsql.connect(**{"execution.runtime-mode": "streaming"})
    session.sql("SET 'pipeline.auto-watermark-interval' = '0'")
    session.sql(f"""CREATE TABLE t (k STRING, v BIGINT, ts TIMESTAMP(3),
                      WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
                    WITH ('connector' = 'filesystem', 'path' = '{tmp_path / "t.csv"}',
                          'format' = 'csv')""")
    result = session.sql("SELECT k, COUNT(*) AS c, MAX(v) AS m FROM t GROUP BY k")
    changes = [tuple(r.values()) for b in result.stream() for r in b.to_pylist()]
    assert changes == [("+I", "a", 1, 1), ("+I", "b", 1, 2), ("-U", "a", 1, 1),
                       ("+U", "a", 2, 3), ("+I", "c", 1, 5)]
    total = session.sql("SELECT COUNT(*) AS c FROM t").stream()
    assert [tuple(r.values()) for b in total for r in b.to_pylist()] == [
        ("+I", 1), ("-U", 1), ("+U", 2), ("-U", 2), ("+U", 3), ("-U", 3), ("+U", 4)]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("retract", [False, True])
def test_colliding_pair_hashes_change_nothing(seed: int, retract: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # every (group, value) pair hashes alike: a batch then finds the stored values of
    # pairs it does not hold, some of groups it does not touch, and must tell them apart
    # by their values and leave them as they are
    import numpy as np

    from flowsql.runtime.operators.aggregate import changelog_group_aggregate

    monkeypatch.setattr(changelog_group_aggregate, "_pair_hashes",
                        lambda groups, values: np.zeros(len(values), dtype=np.uint64))
    test_random_chunking_materializes_to_duckdb(seed, retract, False)
