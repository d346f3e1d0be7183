"""ORDER BY under a tiny memory budget: the external merge sort gives exactly the rows,
in exactly the order, of the in-memory sort and of DuckDB (stability included), and
leaves no spill file behind."""

from __future__ import annotations

import decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.expressions import Call, SortKey
from flowsql.planner.physical import SortExec
from tests.harness.operators import duck, leaf
from tests.runtime.spill.spill_driver import drive_spilling

ROWS = 120_000


def _data(rows: int = ROWS, seed: int = 7) -> pa.Table:
    """Keys with many duplicates and NULLs, strings, and ``id`` = input position."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 50, rows)
    f = rng.normal(size=rows).round(1)
    s = np.array([f"name-{v:03d}" for v in range(300)], dtype=object)[rng.integers(0, 300, rows)]
    return pa.table({
        "k": pa.array(k, pa.int64(), mask=rng.random(rows) < 0.05),
        "f": pa.array(f, pa.float64(), mask=rng.random(rows) < 0.1),
        "s": pa.array(s, pa.string(), mask=rng.random(rows) < 0.03),
        "id": pa.array(np.arange(rows), pa.int64()),
    })


def _sort(table: pa.Table, keys: list[tuple[str, bool, bool]]
          ) -> tuple[SortExec, list[pa.RecordBatch]]:
    node, _ = leaf(table)
    refs = {f.name: f.ref() for f in node.fields}
    specs = tuple(SortKey(refs[name], asc, nulls_first) for name, asc, nulls_first in keys)
    return SortExec(node, specs, float(table.num_rows)), table.to_batches(max_chunksize=4096)


def _duck_order(keys: list[tuple[str, bool, bool]]) -> str:
    """DuckDB's ORDER BY for ``keys`` with ``id`` last: a stable sort's order."""
    terms = [f"{name} {'ASC' if asc else 'DESC'} NULLS {'FIRST' if nf else 'LAST'}"
             for name, asc, nf in keys]
    return ", ".join([*terms, "id"])


KEY_SETS = {
    "int": [("k", True, False)],
    "int-desc-nulls-first": [("k", False, True)],
    "multi": [("s", True, True), ("f", False, False)],
    "string-desc-then-int": [("s", False, False), ("k", True, True)],
}


@pytest.mark.parametrize("budget", ["64kb", "1mb"])
@pytest.mark.parametrize("keys", KEY_SETS.values(), ids=KEY_SETS.keys())
def test_spilled_sort_equals_in_memory_sort_and_duckdb(
        keys: list[tuple[str, bool, bool]], budget: str, tmp_path: Path) -> None:
    table = _data()
    node, batches = _sort(table, keys)
    spilled, metrics = drive_spilling(node, batches, budget=budget, tmp=tmp_path / "spill")
    in_memory, unspilled = drive_spilling(node, batches, budget=None, tmp=tmp_path / "mem")
    assert metrics["spilled_runs"] > 1 and metrics["spilled_bytes"] > 0
    assert "spilled_runs" not in unspilled
    if budget == "64kb":  # one block per run does not fit: intermediate merge passes
        assert metrics["spilled_bytes"] > 2 * table.nbytes
    assert spilled.equals(in_memory)
    expected = duck(f"SELECT * FROM t ORDER BY {_duck_order(keys)}", t=table)
    assert spilled.to_pylist() == expected.to_pylist()


def test_equal_keys_keep_input_order_across_runs(tmp_path: Path) -> None:
    # three key values over many runs: every run holds every key, so the merge must break
    # each tie by run index and position
    rows = 60_000
    table = pa.table({"k": pa.array(np.arange(rows) % 3, pa.int64()),
                      "id": pa.array(np.arange(rows), pa.int64())})
    node, batches = _sort(table, [("k", False, False)])
    out, metrics = drive_spilling(node, batches, budget="64kb", tmp=tmp_path)
    assert metrics["spilled_runs"] > 10
    ids = out.column("id").to_numpy()
    keys = out.column("k").to_numpy()
    assert (np.diff(keys) <= 0).all()
    for key in range(3):
        run = ids[keys == key]
        assert (np.diff(run) > 0).all() and len(run) == rows // 3


def test_sorted_and_reversed_inputs(tmp_path: Path) -> None:
    # presorted input: runs cover disjoint key ranges, so each round emits one run's block
    rows = 80_000
    for values in (np.arange(rows), np.arange(rows)[::-1]):
        table = pa.table({"k": pa.array(values, pa.int64()),
                          "id": pa.array(np.arange(rows), pa.int64())})
        node, batches = _sort(table, [("k", True, False)])
        out, _ = drive_spilling(node, batches, budget="64kb", tmp=tmp_path)
        assert out.column("k").to_numpy().tolist() == list(range(rows))


def test_computed_key_and_decimal_key(tmp_path: Path) -> None:
    rows = 50_000
    rng = np.random.default_rng(3)
    table = pa.table({
        "d": pa.array([None if i % 11 == 0 else decimal.Decimal(int(v)).scaleb(-2)
                       for i, v in enumerate(rng.integers(-10**6, 10**6, rows))],
                      pa.decimal128(12, 2)),
        "x": pa.array(rng.integers(0, 1000, rows), pa.int64()),
        "id": pa.array(np.arange(rows), pa.int64()),
    })
    node, batches = _sort(table, [])
    refs = [f.ref() for f in node.input.schema]
    negated = Call("negate", (refs[1],), T.INT64)
    node = SortExec(node.input, (SortKey(refs[0], False, True), SortKey(negated)), rows)
    out, metrics = drive_spilling(node, batches, budget="64kb", tmp=tmp_path)
    assert metrics["spilled_runs"] > 1
    expected = duck("SELECT * FROM t ORDER BY d DESC NULLS FIRST, -x, id", t=table)
    assert out.to_pylist() == expected.to_pylist()


def test_small_input_is_not_spilled(tmp_path: Path) -> None:
    table = _data(1000)
    node, batches = _sort(table, [("k", True, False)])
    out, metrics = drive_spilling(node, batches, budget="1mb", tmp=tmp_path)
    assert "spilled_runs" not in metrics
    assert out.to_pylist() == duck(f"SELECT * FROM t ORDER BY {_duck_order([('k', True, False)])}",
                                   t=table).to_pylist()
