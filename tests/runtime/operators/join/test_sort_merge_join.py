"""Sort-merge join of every kind against DuckDB and the hash join, over sorted random inputs
with duplicate and NULL keys, cut into batches of many sizes and fed interleaved as the
runner feeds a merging operator."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError, ResourceExhausted
from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Expr
from flowsql.planner.physical import HashJoinExec, SortMergeJoinExec, ValuesExec
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.operators.contract import Merging
from flowsql.runtime.registry import create_operator
from tests.harness.operators import assert_rows, drive, duck, leaf

KINDS = ["inner", "left", "right", "full", "semi", "anti"]
JOIN_SQL = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN"}
# key columns by name: an integer, a string, a decimal, a date
KEY_SETS = [["k"], ["s"], ["k", "s"], ["m", "d"]]


def _random_side(rng: np.random.Generator, rows: int, value: str) -> pa.Table:
    """Keys with duplicates and NULLs (few distinct values, so runs span batches)."""
    def nulls(values: list[object]) -> list[object]:
        return [None if rng.random() < 0.1 else v for v in values]

    ints = rng.integers(0, rows // 3 + 2, rows)
    return pa.table({
        "k": pa.array(nulls(ints.tolist()), pa.int64()),
        "s": pa.array(nulls([f"s{v}" for v in rng.integers(0, 6, rows)])),
        "m": pa.array(nulls([decimal.Decimal(int(v)) / 4 for v in rng.integers(0, 5, rows)]),
                      pa.decimal128(10, 2)),
        "d": pa.array(nulls([datetime.date(2024, 1, 1) + datetime.timedelta(days=int(v))
                             for v in rng.integers(0, 4, rows)]), pa.date32()),
        value: pa.array(rng.integers(0, 100, rows), pa.int64()),
    })


def _sorted(table: pa.Table, keys: list[str]) -> pa.Table:
    return table.sort_by([(k, "ascending", "at_end") for k in keys])


def _node(kind: str, ln: ValuesExec, rn: ValuesExec, keys: list[str],
          residual: bool) -> SortMergeJoinExec:
    names = [f.name for f in ln.fields]
    lkeys = tuple(ln.fields[names.index(k)].ref() for k in keys)
    rkeys = tuple(rn.fields[names.index(k)].ref() for k in keys)
    cond: Expr | None = (Call("lt", (ln.fields[4].ref(), rn.fields[4].ref()), T.BOOL)
                         if residual else None)
    return SortMergeJoinExec(ln, rn, kind, lkeys, rkeys, cond, 1.0)


def merge_drive(node: SortMergeJoinExec, left: list[pa.RecordBatch],
                right: list[pa.RecordBatch], budget: MemoryBudget | None = None,
                batch_size: int = 7) -> pa.Table:
    """Run the operator as the runner does: each batch from the input it asks for."""
    operator = create_operator(node)
    assert isinstance(operator, Merging)
    operator.open(OperatorContext("test", {"execution.batch-size": str(batch_size)},
                                  budget or MemoryBudget(None)))
    queues, ended, out = [list(left), list(right)], [False, False], []
    while not all(ended):
        index = operator.next_input()
        if ended[index]:
            index = ended.index(False)
        if queues[index]:
            out.extend(operator.process_batch(index, queues[index].pop(0)))
        else:
            ended[index] = True
            out.extend(operator.end_input(index))
    operator.close()
    names = [f.name for f in node.schema]
    if not out:
        return pa.table([pa.array([], f.dtype) for f in node.schema], names=names)
    return pa.Table.from_batches([pa.RecordBatch.from_arrays(b.columns, names=names)
                                  for b in out])


def _expected(kind: str, keys: list[str], residual: bool, left: pa.Table,
              right: pa.Table) -> pa.Table:
    cond = " AND ".join(f"l.{k} = r.{k}" for k in keys) + (" AND l.x < r.y" if residual else "")
    if kind in ("semi", "anti"):
        neg = "NOT " if kind == "anti" else ""
        return duck(f"SELECT * FROM l WHERE {neg}EXISTS (SELECT 1 FROM r WHERE {cond})",
                    l=left, r=right)
    return duck(f"SELECT * FROM l {JOIN_SQL[kind]} r ON {cond}", l=left, r=right)


def _assert_left_order(out: pa.Table) -> None:
    """Left rows keep their input order (``x`` numbers them); right-only rows come last."""
    position = out.column(4).to_pylist()
    present = [p for p in position if p is not None]
    assert present == sorted(present)
    assert position[:len(present)] == present


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("keys", KEY_SETS, ids="-".join)
@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("chunks", [(1, 2), (3, 5), (1000, 1000)])
def test_random_inputs_match_duckdb_and_hash_join(kind: str, keys: list[str], residual: bool,
                                                  chunks: tuple[int, int]) -> None:
    rng = np.random.default_rng(len(kind) * 31 + len(keys) + int(residual) + chunks[0])
    left = _sorted(_random_side(rng, 60, "x"), keys)
    left = left.set_column(4, "x", pa.array(np.arange(left.num_rows), pa.int64()))
    right = _sorted(_random_side(rng, 45, "y"), keys)
    right = right.set_column(4, "y", pa.array(rng.integers(0, 60, right.num_rows), pa.int64()))
    ln, lb = leaf(left, chunks[0])
    rn, rb = leaf(right, chunks[1])
    node = _node(kind, ln, rn, keys, residual)
    out = merge_drive(node, lb, rb)
    assert_rows(out, _expected(kind, keys, residual, left, right))
    _assert_left_order(out)
    hashed = HashJoinExec(ln, rn, kind, node.left_keys, node.right_keys, node.residual,
                          "right", 1.0)
    assert_rows(out, drive(hashed, lb, rb))


@pytest.mark.parametrize("kind", KINDS)
def test_inputs_read_one_after_the_other_give_the_same_rows(kind: str) -> None:
    """Reading the inputs sequentially (ignoring ``next_input``) is correct too."""
    rng = np.random.default_rng(7)
    left, right = _sorted(_random_side(rng, 50, "x"), ["k"]), _sorted(_random_side(rng, 50, "y"),
                                                                       ["k"])
    ln, lb = leaf(left, 3)
    rn, rb = leaf(right, 4)
    out = drive(_node(kind, ln, rn, ["k"], True), lb, rb)
    assert_rows(out, _expected(kind, ["k"], True, left, right))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("empty", ["left", "right", "both"])
def test_empty_sides(kind: str, empty: str) -> None:
    rng = np.random.default_rng(3)
    left, right = _sorted(_random_side(rng, 20, "x"), ["k"]), _sorted(_random_side(rng, 20, "y"),
                                                                       ["k"])
    if empty in ("left", "both"):
        left = left.slice(0, 0)
    if empty in ("right", "both"):
        right = right.slice(0, 0)
    ln, lb = leaf(left, 3)
    rn, rb = leaf(right, 3)
    out = merge_drive(_node(kind, ln, rn, ["k"], False), lb, rb)
    assert_rows(out, _expected(kind, ["k"], False, left, right))


def test_all_null_and_single_key_runs() -> None:
    """One key value on both sides (the whole input is one key range) and NULL-only keys."""
    left = pa.table({"k": [5] * 9 + [None] * 3, "s": ["a"] * 12, "m": [None] * 12,
                     "d": [None] * 12, "x": list(range(12))})
    right = pa.table({"k": [5] * 4 + [None] * 2, "s": ["a"] * 6, "m": [None] * 6,
                      "d": [None] * 6, "y": list(range(6))})
    left = left.cast(pa.schema([("k", pa.int64()), ("s", pa.string()),
                                ("m", pa.decimal128(10, 2)), ("d", pa.date32()),
                                ("x", pa.int64())]))
    right = right.cast(pa.schema([("k", pa.int64()), ("s", pa.string()),
                                  ("m", pa.decimal128(10, 2)), ("d", pa.date32()),
                                  ("y", pa.int64())]))
    for kind in KINDS:
        for keys in (["k"], ["m"], ["k", "s"]):
            ln, lb = leaf(left, 2)
            rn, rb = leaf(right, 1)
            out = merge_drive(_node(kind, ln, rn, keys, False), lb, rb)
            assert_rows(out, _expected(kind, keys, False, left, right))


def test_memory_is_bounded_by_the_key_range_not_the_inputs() -> None:
    rows = 200_000
    keys = np.arange(rows, dtype=np.int64) // 2
    left = pa.table({"k": keys, "s": pa.nulls(rows, pa.string()),
                     "m": pa.nulls(rows, pa.decimal128(10, 2)), "d": pa.nulls(rows, pa.date32()),
                     "x": np.arange(rows, dtype=np.int64)})
    right = left.rename_columns(["k", "s", "m", "d", "y"])
    ln, lb = leaf(left, 1000)
    rn, rb = leaf(right, 1000)
    budget = MemoryBudget(None)
    out = merge_drive(_node("inner", ln, rn, ["k"], False), lb, rb, budget, batch_size=4096)
    assert out.num_rows == 2 * rows
    assert budget.peak < left.nbytes / 20, (budget.peak, left.nbytes)
    assert budget.used == 0
    assert out.column(0).to_pylist() == sorted(out.column(0).to_pylist())


def test_memory_budget_is_enforced() -> None:
    rows = 5000
    left = pa.table({"k": np.zeros(rows, dtype=np.int64), "s": pa.nulls(rows, pa.string()),
                     "m": pa.nulls(rows, pa.decimal128(10, 2)), "d": pa.nulls(rows, pa.date32()),
                     "x": np.arange(rows, dtype=np.int64)})
    ln, lb = leaf(left, 100)
    rn, rb = leaf(left.rename_columns(["k", "s", "m", "d", "y"]), 100)
    with pytest.raises(ResourceExhausted):
        merge_drive(_node("inner", ln, rn, ["k"], False), lb, rb, MemoryBudget(20_000))


@pytest.mark.parametrize("keys", [["k"], ["s"]])
def test_unsorted_input_is_an_error(keys: list[str]) -> None:
    rng = np.random.default_rng(11)
    left = _sorted(_random_side(rng, 30, "x"), keys)
    right = _random_side(rng, 30, "y")  # not sorted
    ln, lb = leaf(left, 4)
    rn, rb = leaf(right, 4)
    with pytest.raises(ExecutionError, match="right input of a sort-merge join is not sorted"):
        merge_drive(_node("inner", ln, rn, keys, False), lb, rb)
