"""The hash join under a memory budget too small for its build side: grace partitions on
disk (recursing where a partition is still too large) give exactly DuckDB's answer for every
join kind, a skewed key fails naming it, and no spill file is left behind."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import ResourceExhausted
from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Expr
from flowsql.planner.physical import HashJoinExec, ValuesExec
from flowsql.planner.schema import Field, to_arrow_schema
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.registry import create_operator
from flowsql.runtime.spill import SpillSpace
from tests.harness.operators import assert_rows, duck, leaf

BUDGETS = {"64kb": 64 * 1024, "1mb": 1 << 20}


def _side(rows: int, seed: int, keys: int) -> pa.Table:
    """Rows with duplicate and NULL int keys, a string key (also with NULLs), a value."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, keys, rows)
    k_null = rng.random(rows) < 0.03
    c = rng.integers(0, 4, rows)
    c_null = rng.random(rows) < 0.02
    return pa.table({
        "k": pa.array(k, pa.int64(), mask=k_null),
        "c": pa.array([f"code-{v}" for v in c], pa.string(), mask=c_null),
        "v": pa.array(rng.integers(0, 1000, rows), pa.int64()),
        "s": pa.array([f"payload {i:08d} {'x' * (i % 13)}" for i in range(rows)]),
    })


L = _side(24_000, 1, 6_000)
R = _side(20_000, 2, 7_000)
SQL_KIND = {"inner": "JOIN", "left": "LEFT JOIN", "right": "RIGHT JOIN", "full": "FULL JOIN"}


def _run(node: HashJoinExec, left: list[pa.RecordBatch], right: list[pa.RecordBatch],
         budget: int | None, tmp: Path) -> tuple[pa.Table, dict[str, int]]:
    """The join's output and metrics; asserts no spill file is left under ``tmp``."""
    space = SpillSpace([str(tmp)])
    context = OperatorContext("HashJoin[test]", {"execution.batch-size": "1000"},
                              MemoryBudget(budget), spill=space)
    operator = create_operator(node)
    operator.open(context)
    out: list[pa.RecordBatch] = []
    try:
        for index in operator.input_order or (0, 1):
            for batch in (left, right)[index]:
                out.extend(operator.process_batch(index, batch))
            out.extend(operator.end_input(index))
    finally:
        operator.close()
        assert [f for _, _, files in os.walk(tmp) for f in files] == []
        space.cleanup()
    schema = to_arrow_schema(node.schema)
    table = pa.Table.from_batches(
        [pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in out], schema=schema)
    assert context.memory.used == 0
    return table, context.metrics


def _nodes(left: pa.Table = L, right: pa.Table = R
           ) -> tuple[ValuesExec, list[pa.RecordBatch], ValuesExec, list[pa.RecordBatch]]:
    ln, lb = leaf(left, 2000)
    rn, rb = leaf(right, 2000)
    return ln, lb, rn, rb


def _join(kind: str, ln: ValuesExec, rn: ValuesExec, keys: list[tuple[int, int]],
          residual: bool, build: str = "right", **kw: object) -> HashJoinExec:
    condition: Expr | None = (Call("lt", (ln.fields[2].ref(), rn.fields[2].ref()), T.BOOL)
                              if residual else None)
    return HashJoinExec(ln, rn, kind, tuple(ln.fields[i].ref() for i, _ in keys),
                        tuple(rn.fields[j].ref() for _, j in keys), condition, build, 1.0,
                        **kw)  # type: ignore[arg-type]


def _spilled(metrics: dict[str, int]) -> None:
    assert metrics.get("spilled_bytes", 0) > 0 and metrics.get("spilled_runs", 0) > 0


@pytest.mark.parametrize("budget", sorted(BUDGETS))
@pytest.mark.parametrize("build", ["left", "right"])
@pytest.mark.parametrize("kind", ["inner", "left", "right", "full"])
def test_row_kinds_spill_and_match_duckdb(kind: str, build: str, budget: str,
                                         tmp_path: Path) -> None:
    ln, lb, rn, rb = _nodes()
    residual = kind in ("left", "full")
    node = _join(kind, ln, rn, [(0, 0), (1, 1)], residual, build)
    out, metrics = _run(node, lb, rb, BUDGETS[budget], tmp_path)
    _spilled(metrics)
    cond = "l.k = r.k AND l.c = r.c" + (" AND l.v < r.v" if residual else "")
    assert_rows(out, duck(f"SELECT * FROM l {SQL_KIND[kind]} r ON {cond}", l=L, r=R))


@pytest.mark.parametrize("budget", sorted(BUDGETS))
@pytest.mark.parametrize("build", ["left", "right"])
@pytest.mark.parametrize("kind", ["semi", "anti", "mark"])
@pytest.mark.parametrize("residual", [False, True])
def test_semi_anti_mark_spill_and_match_duckdb(kind: str, residual: bool, build: str,
                                               budget: str, tmp_path: Path) -> None:
    ln, lb, rn, rb = _nodes()
    mark = Field.fresh("m", T.BOOL) if kind == "mark" else None
    node = _join(kind, ln, rn, [(0, 0)], residual, build, mark=mark)
    out, metrics = _run(node, lb, rb, BUDGETS[budget], tmp_path)
    _spilled(metrics)
    cond = "r.k = l.k" + (" AND l.v < r.v" if residual else "")
    exists = f"EXISTS (SELECT 1 FROM r WHERE {cond})"
    sql = {"semi": f"SELECT * FROM l WHERE {exists}",
           "anti": f"SELECT * FROM l WHERE NOT {exists}",
           "mark": f"SELECT *, {exists} FROM l"}[kind]
    assert_rows(out, duck(sql, l=L, r=R))


@pytest.mark.parametrize("budget", sorted(BUDGETS))
@pytest.mark.parametrize("build", ["left", "right"])
@pytest.mark.parametrize("right_nulls", [False, True])
def test_null_aware_in_and_not_in_spill(build: str, right_nulls: bool, budget: str,
                                        tmp_path: Path) -> None:
    right = R if right_nulls else R.filter(pa.compute.is_valid(R.column("k")))
    ln, lb, rn, rb = _nodes(right=right)
    mark = Field.fresh("m", T.BOOL)
    node = _join("mark", ln, rn, [(0, 0)], False, build, mark=mark, null_aware=True)
    out, metrics = _run(node, lb, rb, BUDGETS[budget], tmp_path)
    _spilled(metrics)
    assert_rows(out, duck("SELECT *, k IN (SELECT k FROM r) FROM l", l=L, r=right))
    anti = _join("anti", ln, rn, [(0, 0)], False, build, null_aware=True)
    out, _ = _run(anti, lb, rb, BUDGETS[budget], tmp_path)
    assert_rows(out, duck("SELECT * FROM l WHERE k NOT IN (SELECT k FROM r)", l=L, r=right))


@pytest.mark.parametrize("build", ["left", "right"])
@pytest.mark.parametrize("residual", [False, True])
def test_correlated_null_aware_spills_on_correlation_keys(build: str, residual: bool,
                                                          tmp_path: Path) -> None:
    """``c IN (SELECT r.c FROM r WHERE r.k = l.k)``: partitioned on the correlation key."""
    ln, lb, rn, rb = _nodes()
    extra = " AND l.v < r.v" if residual else ""
    mark = Field.fresh("m", T.BOOL)
    node = _join("mark", ln, rn, [(1, 1), (0, 0)], residual, build, mark=mark,
                 null_aware=True)
    out, metrics = _run(node, lb, rb, BUDGETS["64kb"], tmp_path)
    _spilled(metrics)
    assert_rows(out, duck(f"SELECT *, c IN (SELECT r.c FROM r WHERE r.k = l.k{extra}) "
                          "FROM l", l=L, r=R))
    anti = _join("anti", ln, rn, [(1, 1), (0, 0)], residual, build, null_aware=True)
    out, _ = _run(anti, lb, rb, BUDGETS["64kb"], tmp_path)
    assert_rows(out, duck(f"SELECT * FROM l WHERE c NOT IN "
                          f"(SELECT r.c FROM r WHERE r.k = l.k{extra})", l=L, r=R))


@pytest.mark.parametrize("build", ["left", "right"])
def test_single_join_spills(build: str, tmp_path: Path) -> None:
    unique = pa.table({"k": pa.array(range(0, 40_000, 2), pa.int64()),
                       "w": pa.array([f"w{i}" for i in range(20_000)])})
    ln, lb, rn, rb = _nodes(right=unique)
    out, metrics = _run(_join("single", ln, rn, [(0, 0)], False, build), lb, rb,
                        BUDGETS["64kb"], tmp_path)
    _spilled(metrics)
    assert_rows(out, duck("SELECT * FROM l LEFT JOIN r ON l.k = r.k", l=L, r=unique))


def test_partition_still_too_large_is_split_again(tmp_path: Path) -> None:
    """At 64 KiB the first-level partitions of ~1 MiB of build rows do not fit, so they are
    partitioned again one level deeper (more runs than one level writes)."""
    ln, lb, rn, rb = _nodes()
    out, metrics = _run(_join("inner", ln, rn, [(0, 0)], False), lb, rb, BUDGETS["64kb"],
                        tmp_path)
    assert metrics["spilled_runs"] > 2 * 16
    assert_rows(out, duck("SELECT * FROM l JOIN r ON l.k = r.k", l=L, r=R))


def test_unlimited_budget_does_not_spill(tmp_path: Path) -> None:
    ln, lb, rn, rb = _nodes()
    out, metrics = _run(_join("full", ln, rn, [(0, 0)], True), lb, rb, None, tmp_path)
    assert "spilled_bytes" not in metrics
    assert_rows(out, duck("SELECT * FROM l FULL JOIN r ON l.k = r.k AND l.v < r.v",
                          l=L, r=R))


def test_one_key_too_large_for_the_budget_fails_naming_it(tmp_path: Path) -> None:
    skewed = pa.table({"k": pa.array([424242] * 6000 + list(range(3000)), pa.int64()),
                       "s": pa.array([f"value {i:06d}" for i in range(9000)])})
    ln, lb, rn, rb = _nodes(right=skewed)
    with pytest.raises(ResourceExhausted, match=r"HashJoin\[test\].*join key 424242.*"
                                                r"execution\.memory-budget"):
        _run(_join("inner", ln, rn, [(0, 0)], False), lb, rb, BUDGETS["64kb"], tmp_path)


def test_not_in_correlated_only_by_a_residual_cannot_spill(tmp_path: Path) -> None:
    ln, lb, rn, rb = _nodes()
    node = _join("anti", ln, rn, [(0, 0)], True, null_aware=True)
    with pytest.raises(ResourceExhausted, match="cannot be split to disk"):
        _run(node, lb, rb, BUDGETS["64kb"], tmp_path)


@pytest.mark.parametrize("kind", ["inner", "left", "right", "full", "anti"])
def test_a_build_side_a_little_over_the_budget_keeps_most_partitions_in_memory(
        kind: str, tmp_path: Path) -> None:
    """Hybrid: only the partitions that do not fit go to disk, with their probe rows; the
    rest are joined as the probe side streams. Compared with a budget that spills every
    partition, far fewer bytes are written, and the answer is the same."""
    ln, lb, rn, rb = _nodes()
    node = _join(kind, ln, rn, [(0, 0), (1, 1)], kind == "left", "right")
    hybrid, metrics = _run(node, lb, rb, int(2.3 * 2**20), tmp_path / "h")
    everything, all_spilled = _run(node, lb, rb, BUDGETS["64kb"], tmp_path / "a")
    _spilled(metrics)
    assert metrics["spilled_bytes"] < 0.6 * all_spilled["spilled_bytes"]
    assert_rows(hybrid, everything)
    cond = "l.k = r.k AND l.c = r.c" + (" AND l.v < r.v" if kind == "left" else "")
    sql = (f"SELECT * FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE {cond})"
           if kind == "anti" else f"SELECT * FROM l {SQL_KIND[kind]} r ON {cond}")
    assert_rows(hybrid, duck(sql, l=L, r=R))
