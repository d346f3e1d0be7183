"""The hash aggregate under tiny memory budgets: it spills partitioned partial aggregates
(or argument columns) and still gives DuckDB's rows; its spill files are gone afterwards."""

from __future__ import annotations

import decimal
import math
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, Call, Expr, Literal
from flowsql.planner.physical import HashAggregateExec, SortAggregateExec
from flowsql.planner.schema import Field, to_arrow_schema
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.operators.aggregate.spilled_groups import PARTITIONS
from flowsql.runtime.registry import create_operator
from flowsql.runtime.spill import SpillSpace
from tests.harness.operators import duck, leaf, rows

D = decimal.Decimal
ROWS = 120_000


def _data(rows: int = ROWS, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)

    def nulls(fraction: float) -> np.ndarray:
        return rng.random(rows) < fraction

    many = pa.array([f"k{n:05d}" for n in rng.integers(0, 30_000, rows)],
                    mask=nulls(0.002))
    few = pa.array(rng.integers(0, 4, rows).astype(np.int32), mask=nulls(0.05))
    cents = rng.integers(-10**9, 10**9, rows)
    money = pa.array([D(int(c)).scaleb(-2) for c in cents], pa.decimal128(15, 2),
                     mask=nulls(0.1))
    words = pa.array([f"w{n:03d}" for n in rng.integers(0, 500, rows)], mask=nulls(0.1))
    return pa.table({
        "many": many,
        "few": few,
        "i": pa.array(rng.integers(-1000, 1000, rows).astype(np.int32), mask=nulls(0.1)),
        "m": money,
        "f": pa.array(rng.random(rows) * 100, mask=nulls(0.1)),
        "s": words,
        "b": pa.array(rng.random(rows) < 0.7, mask=nulls(0.1)),
    })


DATA = _data()
COLUMNS = DATA.column_names

# (name, column, result type, distinct, sql); every one of these merges
MERGEABLE = [
    ("sum", "i", T.INT64, False, "sum(i)"),
    ("sum", "m", pa.decimal128(38, 2), False, "sum(m)"),
    ("sum", "f", T.FLOAT64, False, "sum(f)"),
    ("count", "m", T.INT64, False, "count(m)"),
    ("count_star", None, T.INT64, False, "count(*)"),
    ("avg", "m", T.FLOAT64, False, "avg(m)"),
    ("avg", "f", T.FLOAT64, False, "avg(f)"),
    ("min", "s", T.STRING, False, "min(s)"),
    ("max", "s", T.STRING, False, "max(s)"),
    ("max", "m", pa.decimal128(15, 2), False, "max(m)"),
    ("min", "i", T.INT32, True, "min(DISTINCT i)"),
    ("bool_and", "b", T.BOOL, False, "bool_and(b)"),
    ("bool_or", "b", T.BOOL, False, "bool_or(b)"),
]
# these do not: the operator holds (and spills) their argument columns
HELD = [
    ("count", "m", T.INT64, True, "count(DISTINCT m)"),
    ("sum", "i", T.INT64, True, "sum(DISTINCT i)"),
    ("avg", "i", T.FLOAT64, True, "avg(DISTINCT i)"),
    ("stddev_samp", "f", T.FLOAT64, False, "stddev_samp(f)"),
    ("var_pop", "m", T.FLOAT64, False, "var_pop(m)"),
    ("max", "s", T.STRING, False, "max(s)"),
    ("sum", "m", pa.decimal128(38, 2), False, "sum(m)"),
]


def _node(groups: list[str], aggs: list[tuple], table: pa.Table, filtered: bool = False,
          sorted_input: bool = False) -> tuple[HashAggregateExec | SortAggregateExec,
                                               list[pa.RecordBatch]]:
    node, batches = leaf(table, chunk=4096)
    refs = {f.name: f.ref() for f in node.fields}
    cond: Expr | None = (Call("gt", (refs["f"], Literal(50.0, T.FLOAT64)), T.BOOL)
                         if filtered else None)
    calls = tuple(AggCall(name, (refs[col],) if col is not None else (), dtype, distinct,
                          cond) for name, col, dtype, distinct, _ in aggs)
    group_fields = tuple(node.fields[COLUMNS.index(g)] for g in groups)
    agg_fields = tuple(Field.fresh(f"a{i}", a.dtype) for i, a in enumerate(calls))
    kind = SortAggregateExec if sorted_input else HashAggregateExec
    return kind(node, tuple(refs[g] for g in groups), group_fields, calls, agg_fields,
                1.0), batches


def _sql(groups: list[str], aggs: list[tuple], filtered: bool = False) -> str:
    flt = " FILTER (WHERE f > 50.0)" if filtered else ""
    select = ", ".join([*groups, *(a[4] + flt for a in aggs)])
    group = f" GROUP BY {', '.join(groups)}" if groups else ""
    return f"SELECT {select} FROM t{group}"


def _run(node: HashAggregateExec | SortAggregateExec, batches: list[pa.RecordBatch],
         budget: int | None, tmp_path: Path) -> tuple[pa.Table, OperatorContext]:
    """Drive the operator in its call order with spill files under ``tmp_path``."""
    operator = create_operator(node)
    context = OperatorContext("aggregate", {"execution.batch-size": "8192"},
                              MemoryBudget(budget), spill=SpillSpace([str(tmp_path)]))
    operator.open(context)
    out: list[pa.RecordBatch] = []
    try:
        for batch in batches:
            out.extend(operator.process_batch(0, batch))
        out.extend(operator.end_input(0))
    finally:
        operator.close()
    assert context.memory.used == 0
    schema = to_arrow_schema(node.schema)
    return pa.Table.from_batches(
        [pa.RecordBatch.from_arrays(b.columns, schema=schema) for b in out],
        schema=schema), context


def assert_rows(actual: pa.Table, expected: pa.Table, ordered: bool = False) -> None:
    """Full results equal; doubles (which ``rows`` rounds to 9 decimals) to 12 significant
    digits or that rounding (DuckDB's AVG of a decimal is not always the correctly rounded
    quotient, ours is, so they may differ by an ulp, and sums of doubles depend on the
    order of addition)."""
    assert actual.num_rows == expected.num_rows
    for got, want in zip(rows(actual, ordered), rows(expected, ordered), strict=True):
        for a, b in zip(got, want, strict=True):
            if isinstance(a, float) and isinstance(b, float):
                assert math.isclose(a, b, rel_tol=1e-12, abs_tol=2e-9), (got, want)
            else:
                assert a == b, (got, want)


def _spill_files(tmp_path: Path) -> list[str]:
    return [name for _, _, names in os.walk(tmp_path) for name in names]


KIB = 1024
CASES = [
    # every aggregate merges: held partials are merged, spilled when still too large
    *[("mergeable", groups, budget) for budget in (64 * KIB, 1024 * KIB)
      for groups in (["many"], ["few"], ["few", "many"], ["s", "b"])],
    # held argument columns: a budget must hold a group's rows (4 groups of ~2 MB for few)
    ("held", ["many"], 64 * KIB), ("held", ["s", "b"], 1024 * KIB),
    ("held", ["many"], 1024 * KIB), ("held", ["few", "many"], 1024 * KIB),
    ("held", ["few"], 4096 * KIB),
]


@pytest.mark.parametrize("kind,groups,budget", CASES,
                         ids=[f"{k}-{'+'.join(g)}-{b // KIB}kb" for k, g, b in CASES])
def test_spilled_aggregate_matches_duckdb(kind: str, groups: list[str], budget: int,
                                          tmp_path: Path) -> None:
    aggs = MERGEABLE if kind == "mergeable" else HELD
    node, batches = _node(groups, aggs, DATA)
    out, context = _run(node, batches, budget, tmp_path)
    assert_rows(out, duck(_sql(groups, aggs), t=DATA))
    if "many" in groups or kind == "held":
        assert context.metrics.get("spilled_runs", 0) > 0
    assert _spill_files(tmp_path) == []


@pytest.mark.parametrize("aggs", [MERGEABLE, HELD], ids=["mergeable", "held"])
def test_filtered_aggregates_spill(aggs: list[tuple], tmp_path: Path) -> None:
    node, batches = _node(["many"], aggs, DATA, filtered=True)
    out, context = _run(node, batches, 256 * 1024, tmp_path)
    assert_rows(out, duck(_sql(["many"], aggs, filtered=True), t=DATA))
    assert context.metrics["spilled_runs"] > 0
    assert _spill_files(tmp_path) == []


def test_global_mergeable_aggregate_under_a_tiny_budget(tmp_path: Path) -> None:
    node, batches = _node([], MERGEABLE, DATA)
    out, _ = _run(node, batches, 64 * 1024, tmp_path)
    assert_rows(out, duck(_sql([], MERGEABLE), t=DATA))
    assert _spill_files(tmp_path) == []


def test_unlimited_budget_does_not_spill(tmp_path: Path) -> None:
    for aggs in (MERGEABLE, HELD):
        node, batches = _node(["many"], aggs, DATA)
        out, context = _run(node, batches, None, tmp_path)
        assert_rows(out, duck(_sql(["many"], aggs), t=DATA))
        assert "spilled_runs" not in context.metrics


def test_a_partition_too_large_is_split_again(tmp_path: Path) -> None:
    """At 64 KiB the first level's partitions of the held columns (hundreds of KiB each)
    do not fit: each is partitioned again, so there are more runs than one level has."""
    node, batches = _node(["many"], HELD, DATA)
    out, context = _run(node, batches, 64 * 1024, tmp_path)
    assert_rows(out, duck(_sql(["many"], HELD), t=DATA))
    assert context.metrics["spilled_runs"] > PARTITIONS
    assert _spill_files(tmp_path) == []


def test_one_group_too_large_to_hold_is_aggregated_over_its_spilled_rows(
        tmp_path: Path) -> None:
    """One group cannot be split by its key: its DISTINCT and variance aggregates are
    computed streaming over its spilled rows (``large_group``)."""
    one_group = DATA.set_column(COLUMNS.index("many"), "many",
                                pa.array(["big"] * ROWS))
    node, batches = _node(["many"], HELD, one_group)
    out, context = _run(node, batches, 64 * 1024, tmp_path)
    assert_rows(out, duck(_sql(["many"], HELD), t=one_group))
    assert context.metrics["spilled_runs"] > 0
    assert _spill_files(tmp_path) == []


def test_sort_aggregate_keeps_its_order_with_a_spilling_global_part(tmp_path: Path) -> None:
    """The sort aggregate emits its groups in key order; its global form (no keys) goes
    through the hash aggregate's spilling path."""
    ordered = DATA.filter(DATA.column("few").is_valid()).sort_by("few")
    node, batches = _node(["few"], MERGEABLE, ordered, sorted_input=True)
    out, _ = _run(node, batches, 4096 * KIB, tmp_path)  # holds one group (~1.3 MiB)
    assert_rows(out, duck(_sql(["few"], MERGEABLE) + " ORDER BY few", t=ordered),
                ordered=True)
    glob, batches = _node([], MERGEABLE, DATA, sorted_input=True)
    out, _ = _run(glob, batches, 64 * 1024, tmp_path)
    assert_rows(out, duck(_sql([], MERGEABLE), t=DATA))
