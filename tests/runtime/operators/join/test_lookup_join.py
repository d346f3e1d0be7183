"""The lookup join operator (``FOR SYSTEM_TIME AS OF`` into a bounded table) driven by
hand: inner and left joins, a residual, NULL keys and duplicate table keys against
DuckDB's join of the same rows; a restore in the middle of the probe stream gives the
rows of an uninterrupted run; the state is the table alone however many rows are probed."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Literal
from flowsql.planner.physical import ValuesExec
from flowsql.planner.physical_streaming import LookupJoinExec
from flowsql.planner.schema import Field, to_arrow_schema
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.operators.join.lookup_join import LookupJoinOperator
from tests.harness.operators import duck, leaf, rows

PROBE = pa.table({"k": pa.array([1, 2, None, 3, 2, 7, 1, None, 4], pa.int64()),
                  "a": pa.array([10, 20, 30, 40, 50, 60, 70, 80, 90], pa.int64())})
#: key 2 twice (a probe row meets both), a NULL key (never matched), key 5 never probed
TABLE = [(1, "one", 5), (2, "two", 15), (2, "deux", 55), (None, "none", 0), (4, "four", 100),
         (5, "five", 1)]


def _table_plan() -> ValuesExec:
    fields = (Field.fresh("k", pa.int64()), Field.fresh("name", pa.string()),
              Field.fresh("limit", pa.int64()))
    literal_rows = tuple(tuple(Literal(v, f.dtype) for v, f in zip(row, fields))
                         for row in TABLE)
    return ValuesExec(fields, literal_rows, float(len(TABLE)))


def _table_arrow() -> pa.Table:
    return pa.table({"k": pa.array([r[0] for r in TABLE], pa.int64()),
                     "name": [r[1] for r in TABLE],
                     "limit": pa.array([r[2] for r in TABLE], pa.int64())})


def _node(kind: str, residual: bool) -> tuple[LookupJoinExec, list[pa.RecordBatch]]:
    probe, batches = leaf(PROBE)
    table = _table_plan()
    condition = (Call("lt", (probe.schema[1].ref(), table.schema[2].ref()), T.BOOL)
                 if residual else None)  # probe.a < table.limit
    node = LookupJoinExec(probe, table, kind, (probe.schema[0].ref(),),
                          (table.schema[0].ref(),), condition, 0.0)
    return node, batches


def _open(node: LookupJoinExec) -> tuple[LookupJoinOperator, OperatorContext]:
    operator = LookupJoinOperator(node)
    context = OperatorContext("lookup", {"execution.batch-size": "3"}, MemoryBudget(None))
    operator.open(context)
    return operator, context


def _result(node: LookupJoinExec, batches: list[Any]) -> pa.Table:
    schema = to_arrow_schema(node.schema)
    return pa.Table.from_batches(
        [pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in batches], schema=schema)


def _run(node: LookupJoinExec, batches: list[pa.RecordBatch]) -> pa.Table:
    operator, _ = _open(node)
    out = [b for batch in batches for b in operator.process_batch(0, batch)]
    out += list(operator.end_input(0))
    operator.close()
    return _result(node, out)


def _expected(kind: str, residual: bool) -> pa.Table:
    on = "p.k = t.k" + (" AND p.a < t.\"limit\"" if residual else "")
    join = "JOIN" if kind == "inner" else "LEFT JOIN"
    return duck(f"SELECT p.k, p.a, t.k, t.name, t.\"limit\" FROM p {join} t ON {on}",
                p=PROBE, t=_table_arrow())


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("kind", ["inner", "left"])
def test_each_probe_row_meets_the_table_as_duckdb_joins_them(kind: str,
                                                             residual: bool) -> None:
    node, batches = _node(kind, residual)
    got = _run(node, batches)
    assert rows(got) == rows(_expected(kind, residual))
    assert got.num_rows > 0


def test_a_probe_batch_is_answered_at_once() -> None:
    node, batches = _node("left", False)
    operator, _ = _open(node)
    # the first batch (keys 1 and 2): one row for key 1, two for key 2 -- no waiting for
    # the end of the stream, as a regular join's padded rows would
    first = _result(node, list(operator.process_batch(0, batches[0])))
    assert rows(first) == [(1, 10, 1, "one", 5), (2, 20, 2, "deux", 55),
                           (2, 20, 2, "two", 15)]


@pytest.mark.parametrize("cut", [1, 3])
def test_a_restore_mid_stream_gives_the_rows_of_an_uninterrupted_run(cut: int) -> None:
    node, batches = _node("left", True)
    before, _ = _open(node)
    out = [b for batch in batches[:cut] for b in before.process_batch(0, batch)]
    snapshot = before.snapshot_state(7)
    before.close()
    # the table is read again when the restored operator opens; nothing of it (or of the
    # probe rows) is in the checkpoint
    assert snapshot == {}
    after, _ = _open(node)
    after.restore_state(snapshot)
    out += [b for batch in batches[cut:] for b in after.process_batch(0, batch)]
    out += list(after.end_input(0))
    after.close()
    assert rows(_result(node, out)) == rows(_expected("left", True))


def test_the_state_is_the_table_however_many_rows_are_probed() -> None:
    node, batches = _node("inner", False)
    operator, context = _open(node)
    sizes = []
    for _ in range(50):
        for batch in batches:
            list(operator.process_batch(0, batch))
        sizes.append((context.gauges["state_rows"](), context.gauges["state_bytes"]()))
    assert {s[0] for s in sizes} == {len(TABLE)}
    assert len({s[1] for s in sizes}) == 1 and sizes[0][1] > 0
    operator.close()


def test_only_inner_and_left_lookups_exist() -> None:
    node, _ = _node("inner", False)
    with pytest.raises(ValueError, match="inner or left"):
        LookupJoinOperator(LookupJoinExec(node.input, node.table, "full", node.left_keys,
                                          node.right_keys, None, 0.0))
