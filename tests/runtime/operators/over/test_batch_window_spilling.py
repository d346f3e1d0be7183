"""Window functions under a tiny memory budget: the input is spilled by the hash of the
common PARTITION BY keys and each partition evaluated on its own; the result equals the
unlimited-budget run row for row (input order included) and DuckDB's."""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from flowsql.errors import ResourceExhausted
from flowsql.planner import types as T
from flowsql.planner.config.units import parse_memory_budget
from flowsql.planner.expressions import Frame, FrameBound, Literal, SortKey, WindowCall
from flowsql.planner.physical import WindowExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import MemoryBudget, OperatorContext
from flowsql.runtime.registry import create_operator
from flowsql.runtime.spill import SpillSpace, partition_spill
from tests.harness.operators import assert_rows, duck, leaf
from tests.runtime.spill.spill_driver import drive_spilling, spill_files


def _data(rows: int = 60_000, groups: int = 400) -> pa.Table:
    rng = np.random.default_rng(17)
    return pa.table({
        "p": pa.array([f"group-{g}" for g in rng.integers(0, groups, rows)],
                      mask=rng.random(rows) < 0.002),
        "q": pa.array(rng.integers(0, 3, rows), pa.int64()),
        "o": pa.array(rng.integers(0, 100, rows), pa.int64(), mask=rng.random(rows) < 0.05),
        # exact sums: a float running sum's rounding depends on the rows summed before
        "v": pa.array([decimal.Decimal(int(c)).scaleb(-2)
                       for c in rng.integers(-10**5, 10**5, rows)], pa.decimal128(12, 2)),
        "id": pa.array(np.arange(rows), pa.int64()),
    })


# (name, args, SQL, type, partition columns, frame)
CALLS = [
    ("row_number", [], "row_number()", T.INT64, ["p"], None),
    ("rank", [], "rank()", T.INT64, ["p"], None),
    ("lag", ["v"], "lag(v)", pa.decimal128(12, 2), ["p"], None),
    ("sum", ["v"], "sum(v)", pa.decimal128(38, 2), ["p"],
     Frame("rows", FrameBound("unbounded_preceding"), FrameBound("current_row"))),
    ("count_star", [], "count(*)", T.INT64, ["p", "q"],
     Frame("range", FrameBound("unbounded_preceding"), FrameBound("current_row"))),
]


def _window(table: pa.Table, calls: list[tuple]) -> tuple[WindowExec, list[pa.RecordBatch]]:
    node, _ = leaf(table)
    refs = {f.name: f.ref() for f in node.fields}
    order = (SortKey(refs["o"], True, False), SortKey(refs["id"]))
    built = tuple(WindowCall(name, tuple(refs[a] if isinstance(a, str) else a for a in args),
                             tuple(refs[p] for p in parts),
                             order, frame, dtype)
                  for name, args, _, dtype, parts, frame in calls)
    fields = tuple(Field.fresh(f"w{i}", c.dtype) for i, c in enumerate(built))
    return WindowExec(node, built, fields, 1.0), table.to_batches(2048)


def _duck(table: pa.Table, calls: list[tuple]) -> pa.Table:
    selects = []
    for _, _, sql, _, parts, frame in calls:
        text = {None: "", "rows": " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
                "range": " RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"}[
                    frame.mode if frame else None]
        selects.append(f"{sql} OVER (PARTITION BY {', '.join(parts)} "
                       f"ORDER BY o ASC NULLS LAST, id{text})")
    return duck(f"SELECT *, {', '.join(selects)} FROM t", t=table)



def spilled_equal_to_unlimited(node: Any, batches: list[pa.RecordBatch], budget: str,
                               tmp_path: Path) -> pa.Table:
    """The window's output at ``budget``, checked to have spilled more than one run and to
    equal, bit for bit, the output of the same input at an unlimited budget (which spills
    nothing)."""
    spilled, metrics = drive_spilling(node, batches, budget=budget, tmp=tmp_path / "s")
    unlimited, none = drive_spilling(node, batches, budget=None, tmp=tmp_path / "u")
    assert metrics["spilled_runs"] > 1 and "spilled_runs" not in none
    assert spilled.equals(unlimited)
    return spilled

@pytest.mark.parametrize("budget, rows", [("64kb", 20_000), ("1mb", 60_000)])
def test_spilled_windows_equal_the_in_memory_result(budget: str, rows: int,
                                                    tmp_path: Path) -> None:
    table = _data(rows)
    node, batches = _window(table, CALLS)
    spilled = spilled_equal_to_unlimited(node, batches, budget, tmp_path)
    assert spilled.column("id").to_pylist() == list(range(table.num_rows))
    if budget == "1mb":
        assert_rows(spilled, _duck(table, CALLS))


def test_a_partition_larger_than_the_budget_splits_again(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # few, large groups: the first split leaves partitions over the budget
    levels: list[int] = []
    split = partition_spill._split

    def counted(*args: Any) -> Any:
        levels.append(args[-1])
        return split(*args)

    monkeypatch.setattr(partition_spill, "_split", counted)
    table = _data(rows=40_000, groups=60)
    calls = CALLS[:2]
    node, batches = _window(table, calls)
    spilled, _ = drive_spilling(node, batches, budget="128kb", tmp=tmp_path)
    assert levels and set(levels) == {1}
    assert_rows(spilled, _duck(table, calls))


def test_one_key_over_the_budget_names_the_key(tmp_path: Path) -> None:
    table = _data(rows=30_000, groups=1).set_column(0, "p", pa.array(["only"] * 30_000))
    node, batches = _window(table, CALLS[:1])
    with pytest.raises(ResourceExhausted, match="'only'.*execution.memory-budget"):
        drive_spilling(node, batches, budget="64kb", tmp=tmp_path)


def test_window_without_partition_keys_fails_clearly(tmp_path: Path) -> None:
    # a sliding frame over the whole input needs it all at once (whole-input ranking
    # streams instead: test_ranking_over_the_whole_input_streams_over_sorted_rows)
    table = _data(rows=20_000)
    node, batches = _window(table, [("max", ["id"], "max(id)", T.INT64, [], ROWS_AROUND)])
    with pytest.raises(ResourceExhausted, match="execution.memory-budget"):
        drive_spilling(node, batches, budget="64kb", tmp=tmp_path)


def test_literal_key_is_no_help_but_harmless(tmp_path: Path) -> None:
    table = _data(rows=5_000)
    node, _ = leaf(table)
    refs = {f.name: f.ref() for f in node.fields}
    call = WindowCall("row_number", (), (refs["p"], Literal(1, T.INT64)),
                      (SortKey(refs["id"]),), None, T.INT64)
    window = WindowExec(node, (call,), (Field.fresh("w0", T.INT64),), 1.0)
    spilled, _ = drive_spilling(window, table.to_batches(1000), budget="64kb", tmp=tmp_path)
    expected = duck("SELECT *, row_number() OVER (PARTITION BY p ORDER BY id) FROM t", t=table)
    assert_rows(spilled, expected)


ROWS_UNBOUNDED = Frame("rows", FrameBound("unbounded_preceding"), FrameBound("current_row"))
RANGE_UNBOUNDED = Frame("range", FrameBound("unbounded_preceding"), FrameBound("current_row"))
ROWS_AROUND = Frame("rows", FrameBound("preceding", Literal(2, T.INT64)),
                    FrameBound("following", Literal(1, T.INT64)))
# calls with two different PARTITION BY key sets (p; o) and with three (p; o; r)
TWO_KEY_SETS = [
    ("row_number", [], "row_number()", T.INT64, ["p"], None),
    ("dense_rank", [], "dense_rank()", T.INT64, ["o"], None),
    ("sum", ["v"], "sum(v)", pa.decimal128(38, 2), ["o"], ROWS_UNBOUNDED),
    ("lead", ["v"], "lead(v)", pa.decimal128(12, 2), ["p", "q"], None),
]
THREE_KEY_SETS = [
    *TWO_KEY_SETS,
    ("rank", [], "rank()", T.INT64, ["r"], None),
    ("lag", ["id"], "lag(id)", T.INT64, ["r"], None),
    ("count_star", [], "count(*)", T.INT64, ["o", "q"], RANGE_UNBOUNDED),
    ("max", ["id"], "max(id)", T.INT64, ["r", "q"], ROWS_AROUND),
]


def _data_with_r(rows: int) -> pa.Table:
    """``_data`` with a further key column r (83 values and NULLs)."""
    table = _data(rows)
    rng = np.random.default_rng(29)
    return table.append_column("r", pa.array(rng.integers(0, 83, rows), pa.int64(),
                                             mask=rng.random(rows) < 0.01))


def _duck_frames(table: pa.Table, calls: list[tuple]) -> pa.Table:
    selects = []
    for _, _, sql, _, parts, frame in calls:
        text = ""
        if frame is ROWS_UNBOUNDED:
            text = " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
        elif frame is RANGE_UNBOUNDED:
            text = " RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
        elif frame is ROWS_AROUND:
            text = " ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING"
        partition = f"PARTITION BY {', '.join(parts)} " if parts else ""
        selects.append(f"{sql} OVER ({partition}ORDER BY o ASC NULLS LAST, id{text})")
    return duck(f"SELECT *, {', '.join(selects)} FROM t", t=table)


@pytest.mark.parametrize("calls", [TWO_KEY_SETS, THREE_KEY_SETS], ids=["two", "three"])
@pytest.mark.parametrize("budget, rows", [("64kb", 20_000), ("1mb", 60_000)])
def test_calls_without_common_keys_spill_group_by_group(budget: str, rows: int,
                                                        calls: list[tuple],
                                                        tmp_path: Path) -> None:
    # p, o and r have NULL keys; no key is common to all calls
    table = _data_with_r(rows)
    node, batches = _window(table, calls)
    spilled = spilled_equal_to_unlimited(node, batches, budget, tmp_path)
    assert spilled.column("id").to_pylist() == list(range(table.num_rows))
    assert_rows(spilled, _duck_frames(table, calls))


def test_calls_without_common_keys_next_to_one_without_keys_fail_clearly(
        tmp_path: Path) -> None:
    table = _data(rows=20_000)
    calls = [*TWO_KEY_SETS[:2], ("max", ["id"], "max(id)", T.INT64, [], ROWS_AROUND)]
    node, batches = _window(table, calls)
    with pytest.raises(ResourceExhausted, match="execution.memory-budget"):
        drive_spilling(node, batches, budget="64kb", tmp=tmp_path)


def test_a_group_key_over_the_budget_fails_and_close_deletes_every_run(tmp_path: Path) -> None:
    # q has three values: its group (the first) cannot fit 64kb; p's group is still spilled
    table = _data(rows=20_000)
    calls = [("rank", [], "rank()", T.INT64, ["q"], None),
             ("row_number", [], "row_number()", T.INT64, ["p"], None)]
    node, batches = _window(table, calls)
    context = OperatorContext("test", {"execution.batch-size": "1024"},
                              MemoryBudget(parse_memory_budget("64kb", "budget")),
                              SpillSpace([str(tmp_path)]))
    operator = create_operator(node)
    operator.open(context)
    with pytest.raises(ResourceExhausted, match="key \\(0,\\).*execution.memory-budget"):
        for batch in batches:
            list(operator.process_batch(0, batch))
        list(operator.end_input(0))
    assert spill_files(tmp_path)  # p's group's runs are left for close
    operator.close()
    assert spill_files(tmp_path) == []
    assert context.memory.used == 0


# ranking over the whole input (no PARTITION BY), next to partitioned calls or alone
WHOLE_INPUT_RANKING = [
    ("row_number", [], "row_number()", T.INT64, [], None),
    ("rank", [], "rank()", T.INT64, [], None),
    ("dense_rank", [], "dense_rank()", T.INT64, [], None),
]


@pytest.mark.parametrize("calls", [WHOLE_INPUT_RANKING, [*WHOLE_INPUT_RANKING, *TWO_KEY_SETS]],
                         ids=["alone", "with-partitioned"])
@pytest.mark.parametrize("budget, rows", [("64kb", 20_000), ("1mb", 60_000)])
def test_ranking_over_the_whole_input_streams_over_sorted_rows(budget: str, rows: int,
                                                               calls: list[tuple],
                                                               tmp_path: Path) -> None:
    # o has 100 values and NULLs: peer groups span the sorted batches
    table = _data_with_r(rows)
    node, batches = _window(table, calls)
    spilled = spilled_equal_to_unlimited(node, batches, budget, tmp_path)
    assert_rows(spilled, _duck_frames(table, calls))


def test_whole_input_ranking_by_peers_only(tmp_path: Path) -> None:
    # ORDER BY o alone: large peer groups, so RANK and DENSE_RANK carry across batches
    table = _data_with_r(20_000)
    node, _ = leaf(table)
    refs = {f.name: f.ref() for f in node.fields}
    order = (SortKey(refs["o"], False, True),)
    calls = tuple(WindowCall(name, (), (), order, None, T.INT64)
                  for name in ("rank", "dense_rank"))
    window = WindowExec(node, calls, tuple(Field.fresh(f"w{i}", T.INT64) for i in range(2)),
                        1.0)
    spilled, metrics = drive_spilling(window, table.to_batches(2048), budget="64kb",
                                      tmp=tmp_path)
    assert metrics["spilled_runs"] > 1
    expected = duck("SELECT *, rank() OVER (ORDER BY o DESC NULLS FIRST), "
                    "dense_rank() OVER (ORDER BY o DESC NULLS FIRST) FROM t", t=table)
    assert_rows(spilled, expected)
    assert spilled.column("id").to_pylist() == list(range(table.num_rows))


# running aggregates over the whole input (no PARTITION BY): frames from the first row to
# the current row stream over the sorted rows like whole-input ranking
WHOLE_INPUT_RUNNING = [
    ("sum", ["v"], "sum(v)", pa.decimal128(38, 2), [], ROWS_UNBOUNDED),
    ("sum", ["o"], "sum(o)", T.INT64, [], RANGE_UNBOUNDED),
    ("count_star", [], "count(*)", T.INT64, [], RANGE_UNBOUNDED),
    ("count", ["o"], "count(o)", T.INT64, [], ROWS_UNBOUNDED),
    ("avg", ["v"], "avg(v)", T.FLOAT64, [], RANGE_UNBOUNDED),
    ("avg", ["id"], "avg(id)", T.FLOAT64, [], ROWS_UNBOUNDED),
    ("min", ["v"], "min(v)", pa.decimal128(12, 2), [], RANGE_UNBOUNDED),
    ("max", ["p"], "max(p)", T.STRING, [], ROWS_UNBOUNDED),
    ("row_number", [], "row_number()", T.INT64, [], None),
]


def _assert_like_duckdb(actual: pa.Table, expected: pa.Table) -> None:
    """Row for row by ``id``: float columns (averages) to 1e-12 relative, as DuckDB adds in
    another order; everything else exactly."""
    actual, expected = actual.sort_by("id"), expected.sort_by("id")
    floats = [i for i, f in enumerate(actual.schema) if pa.types.is_floating(f.type)]
    for i in floats:
        assert actual.column(i).null_count == expected.column(i).null_count
        np.testing.assert_allclose(actual.column(i).to_numpy(zero_copy_only=False),
                                   expected.column(i).to_numpy(zero_copy_only=False),
                                   rtol=1e-12)
    assert_rows(actual.drop_columns([actual.column_names[i] for i in floats]),
                expected.drop_columns([expected.column_names[i] for i in floats]), True)


@pytest.mark.parametrize("calls", [WHOLE_INPUT_RUNNING, [*WHOLE_INPUT_RUNNING, *TWO_KEY_SETS]],
                         ids=["alone", "with-partitioned"])
@pytest.mark.parametrize("budget, rows", [("64kb", 20_000), ("1mb", 60_000)])
def test_running_aggregates_over_the_whole_input_stream_over_sorted_rows(
        budget: str, rows: int, calls: list[tuple], tmp_path: Path) -> None:
    table = _data_with_r(rows)
    node, batches = _window(table, calls)
    # bit for bit, the averages' floats included
    spilled = spilled_equal_to_unlimited(node, batches, budget, tmp_path)
    assert spilled.column("id").to_pylist() == list(range(table.num_rows))
    _assert_like_duckdb(spilled, _duck_frames(table, calls))


def test_whole_input_running_aggregates_by_peers_only(tmp_path: Path) -> None:
    # ORDER BY o alone: peer groups of about 200 rows span the sorted batches, and a RANGE
    # frame ends at the row's last peer (the default frame with ORDER BY, as here)
    table = _data_with_r(20_000)
    node, _ = leaf(table)
    refs = {f.name: f.ref() for f in node.fields}
    order = (SortKey(refs["o"], False, True),)
    specs = [("sum", (refs["v"],), pa.decimal128(38, 2), None),
             ("count_star", (), T.INT64, RANGE_UNBOUNDED),
             ("max", (refs["id"],), T.INT64, None),
             ("avg", (refs["id"],), T.FLOAT64, None),
             ("count", (refs["o"],), T.INT64, ROWS_UNBOUNDED)]
    calls = tuple(WindowCall(name, args, (), order, frame, dtype)
                  for name, args, dtype, frame in specs)
    window = WindowExec(node, calls, tuple(Field.fresh(f"w{i}", c.dtype)
                                           for i, c in enumerate(calls)), 1.0)
    spilled, metrics = drive_spilling(window, table.to_batches(2048), budget="64kb",
                                      tmp=tmp_path / "s")
    unlimited, _ = drive_spilling(window, table.to_batches(2048), budget=None,
                                  tmp=tmp_path / "u")
    assert metrics["spilled_runs"] > 1
    assert spilled.equals(unlimited)
    over = "OVER (ORDER BY o DESC NULLS FIRST)"
    expected = duck(f"SELECT *, sum(v) {over}, count(*) {over}, max(id) {over}, "
                    f"avg(id) {over}, count(o) OVER (ORDER BY o DESC NULLS FIRST ROWS "
                    "BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM t", t=table)
    # count(o) over ROWS among peers depends on the order of peers: compare the rest
    _assert_like_duckdb(spilled.drop_columns([spilled.column_names[-1]]),
                        expected.drop_columns([expected.column_names[-1]]))
    assert spilled.column("id").to_pylist() == list(range(table.num_rows))


# LAG / LEAD over the whole input with constant offsets (the default may be any expression)
WHOLE_INPUT_SHIFTS = [
    ("lag", ["v"], "lag(v)", pa.decimal128(12, 2), [], None),
    ("lead", ["v"], "lead(v)", pa.decimal128(12, 2), [], None),
    ("lag", ["id", Literal(3, T.INT64)], "lag(id, 3)", T.INT64, [], None),
    ("lead", ["p", Literal(1500, T.INT64)], "lead(p, 1500)", T.STRING, [], None),
    ("lead", ["id", Literal(2, T.INT64), "o"], "lead(id, 2, o)", T.INT64, [], None),
    ("lag", ["o", Literal(0, T.INT64)], "lag(o, 0)", T.INT64, [], None),
]


@pytest.mark.parametrize("calls", [WHOLE_INPUT_SHIFTS,
                                   [*WHOLE_INPUT_SHIFTS, *WHOLE_INPUT_RUNNING, *TWO_KEY_SETS]],
                         ids=["alone", "with-others"])
@pytest.mark.parametrize("budget, rows", [("64kb", 20_000), ("1mb", 60_000)])
def test_lag_and_lead_over_the_whole_input_stream_over_sorted_rows(
        budget: str, rows: int, calls: list[tuple], tmp_path: Path) -> None:
    # lead(p, 1500) looks further ahead than one sorted batch holds
    table = _data_with_r(rows)
    node, batches = _window(table, calls)
    spilled = spilled_equal_to_unlimited(node, batches, budget, tmp_path)
    assert spilled.column("id").to_pylist() == list(range(table.num_rows))
    _assert_like_duckdb(spilled, _duck_frames(table, calls))


def test_lag_by_a_column_over_the_whole_input_still_fails_clearly(tmp_path: Path) -> None:
    # an offset that differs per row may reach any row: the input must be held whole
    table = _data_with_r(20_000)
    node, batches = _window(table, [("lag", ["id", "q"], "lag(id, q)", T.INT64, [], None)])
    with pytest.raises(ResourceExhausted, match="execution.memory-budget"):
        drive_spilling(node, batches, budget="64kb", tmp=tmp_path)
