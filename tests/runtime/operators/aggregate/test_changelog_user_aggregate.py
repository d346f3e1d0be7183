"""Streaming GROUP BY with class-form user aggregates: the per-batch changelog checked by
hand (additions and retractions, groups appearing and disappearing), built-ins beside the
user functions, the final result equal for any batching and to the same aggregates
computed by DuckDB, accumulator state surviving a snapshot/restore, and errors naming the
function and the group."""

from __future__ import annotations

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
from flowsql.planner.schema import Field
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
from flowsql.runtime.operators.aggregate.changelog_user_aggregate import (
    UserGroupAggregateOperator,
    group_aggregate_operator,
)
from flowsql.sql.user_functions import describe_function
from tests.harness.operators import duck

KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}
SCHEMA = pa.schema([("k", pa.string()), ("v", pa.int64()), ("s", pa.string())])
MEAN = describe_function("my_mean", "tests.udfs.aggregates.Mean")
COLLECT = describe_function("my_collect", "tests.udfs.aggregates.Collect")


def _node(aggs: Sequence[tuple[str, int | None]]) -> GroupAggregateExec:
    fields = tuple(Field.fresh(f.name, f.type) for f in SCHEMA)
    refs = [f.ref() for f in fields]
    user = {"my_mean": MEAN, "my_collect": COLLECT}
    calls = []
    for name, column in aggs:
        args = (refs[column],) if column is not None else ()
        if name in user:
            function = user[name]
            assert function.result_type is not None
            calls.append(AggCall(name, args, function.result_type, function=function))
        else:
            calls.append(AggCall(name, args, T.FLOAT64 if name == "avg" else T.INT64))
    agg_fields = tuple(Field.fresh(f"a{i}", c.dtype) for i, c in enumerate(calls))
    return GroupAggregateExec(ValuesExec(fields, (), 1.0), (refs[0],), (fields[0],),
                              tuple(calls), agg_fields, 1.0)


AGGS = [("my_mean", 1), ("my_collect", 2), ("count_star", None), ("sum", 1)]


def _open(node: GroupAggregateExec) -> UserGroupAggregateOperator:
    operator = group_aggregate_operator(node)
    assert isinstance(operator, UserGroupAggregateOperator)
    operator.open(OperatorContext("group", {}))
    return operator


def _batch(rows: Sequence[tuple[str, Any, Any, Any]]) -> pa.RecordBatch:
    table = pa.Table.from_pylist([dict(zip(SCHEMA.names, r[1:])) for r in rows], schema=SCHEMA)
    batch = table.combine_chunks().to_batches()[0] if rows else SCHEMA.empty_table()
    return with_row_kinds(batch, [KINDS[r[0]] for r in rows])


def _rows(node: GroupAggregateExec, out: Sequence[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    width = len(node.schema)
    result: list[tuple[Any, ...]] = []
    for batch in out:
        kinds = labels(row_kinds(batch, width))
        columns = [batch.column(i).to_pylist() for i in range(width)]
        result.extend((kind, *(c[i] for c in columns)) for i, kind in enumerate(kinds))
    return result


def test_per_batch_changelog_with_retractions() -> None:
    node = _node(AGGS)
    op = _open(node)
    first = op.process_batch(0, _batch([("+I", "a", 1, "x"), ("+I", "b", 4, "y"),
                                        ("+I", "a", 3, "z")]))
    assert _rows(node, first) == [("+I", "a", 2.0, "x|z", 2, 4), ("+I", "b", 4.0, "y", 1, 4)]
    # a: retract 1/x and add 5/w (an update); b: its only row retracted; c: new
    second = op.process_batch(0, _batch([("-U", "a", 1, "x"), ("+U", "a", 5, "w"),
                                         ("-D", "b", 4, "y"), ("+I", "c", None, None)]))
    assert _rows(node, second) == [
        ("-U", "a", 2.0, "x|z", 2, 4), ("+U", "a", 4.0, "w|z", 2, 8),
        ("-D", "b", 4.0, "y", 1, 4), ("+I", "c", None, "", 1, None)]
    # a row added and retracted within one batch changes nothing
    assert _rows(node, op.process_batch(0, _batch([("+I", "a", 7, "q"),
                                                   ("-D", "a", 7, "q")]))) == []


def test_restore_continues_from_the_accumulators_in_the_snapshot() -> None:
    node = _node(AGGS)
    batches = [_batch([("+I", "a", 1, "x"), ("+I", "b", 2, "y")]),
               _batch([("+I", "a", 3, "z"), ("-D", "b", 2, "y")]),
               _batch([("-U", "a", 1, "x"), ("+U", "a", 6, "u"), ("+I", "b", 8, "t")])]
    whole = _open(node)
    expected = [b for batch in batches for b in whole.process_batch(0, batch)]
    first = _open(node)
    out = [b for batch in batches[:2] for b in first.process_batch(0, batch)]
    snapshot = first.snapshot_state(1)
    # the state is data: accumulators as JSON text
    accumulators = next(iter(snapshot.values())).column("acc1").to_pylist()
    assert accumulators == ['{"x":1,"z":1}']
    second = _open(node)
    second.restore_state(snapshot)
    out += [b for batch in batches[2:] for b in second.process_batch(0, batch)]
    assert _rows(node, out) == _rows(node, expected)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_final_result_equals_duckdb_for_any_batching(seed: int) -> None:
    rng = random.Random(seed)
    live: list[tuple[str, Any, Any]] = []
    log: list[tuple[str, Any, Any, Any]] = []
    for _ in range(300):
        if live and rng.random() < 0.35:
            row = live.pop(rng.randrange(len(live)))
            log.append(("-D", *row))
        else:
            row = (rng.choice("abcd"), rng.choice([None, *range(10)]),
                   rng.choice([None, "p", "q", "r"]))
            live.append(row)
            log.append(("+I", *row))
    node = _node(AGGS)
    op = _open(node)
    out = []
    start = 0
    while start < len(log):
        size = rng.randint(1, 40)
        out += op.process_batch(0, _batch(log[start:start + size]))
        start += size
    final = materialize([b for b in out], pa.schema(
        [("k", pa.string()), ("m", pa.float64()), ("c", pa.string()), ("n", pa.int64()),
         ("t", pa.int64())]))
    got = sorted(tuple(r.values()) for r in final.to_pylist())
    rows = pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in live], schema=SCHEMA)
    expected = duck("SELECT k, avg(v), coalesce(string_agg(s, '|' ORDER BY s), ''), "
                    "count(*), sum(v)::BIGINT FROM t GROUP BY k", t=rows)
    assert [_rounded(r) for r in got] == sorted(
        _rounded(tuple(r.values())) for r in expected.to_pylist())


def _rounded(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(round(v, 9) if isinstance(v, float) else v for v in row)


def test_a_failing_accumulate_names_the_function_and_the_group() -> None:
    failing = describe_function("fails_on_nine", "tests.udfs.aggregates.FailsOnNine")
    fields = tuple(Field.fresh(f.name, f.type) for f in SCHEMA)
    node = GroupAggregateExec(ValuesExec(fields, (), 1.0), (fields[0].ref(),), (fields[0],),
                              (AggCall("fails_on_nine", (fields[1].ref(),), T.INT64,
                                       function=failing),),
                              (Field.fresh("a0", T.INT64),), 1.0)
    op = _open(node)
    with pytest.raises(ExecutionError, match=r"aggregate function fails_on_nine failed in "
                                             r"accumulate\(\) on the group \(k = 'b'\), 2 "
                                             r"rows: ValueError: nine"):
        op.process_batch(0, _batch([("+I", "a", 1, None), ("+I", "b", 9, None),
                                    ("+I", "b", 2, None)]))


def test_a_retraction_of_a_row_never_added_is_an_error() -> None:
    op = _open(_node(AGGS))
    with pytest.raises(ExecutionError, match="retraction for a group that has no rows.*"
                                             r"the group \(k = 'a'\)"):
        op.process_batch(0, _batch([("-D", "a", 1, "x")]))
