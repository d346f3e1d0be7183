"""Aggregates reading the very same argument column (Q1's SUM and AVG of l_quantity) are
computed once per function in a partial, with the values each would have alone."""

from __future__ import annotations

import decimal

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, ColumnRef
from flowsql.runtime.operators.aggregate import partial_aggregates as partials

D = decimal.Decimal
PRICE = pa.decimal128(15, 2)


def _agg(name: str, dtype: pa.DataType) -> AggCall:
    return AggCall(name, (ColumnRef(1, "x", dtype),), dtype)


def _rows(table: pa.Table) -> list[dict[str, object]]:
    return sorted(table.to_pylist(), key=lambda row: str(row["g0"]))


def test_one_column_read_by_several_aggregates() -> None:
    prices = pa.array([D("1.50"), D("2.25"), None, D("4.00"), D("0.10")], PRICE)
    equal_copy = pa.array(prices.to_pylist(), PRICE)  # same values, other buffers
    table = pa.table({"g0": ["a", "b", "a", "a", "b"], "a0": prices, "a1": prices,
                      "a2": equal_copy, "a3": prices, "a4": prices})
    aggs = [_agg("sum", PRICE), _agg("avg", PRICE), _agg("sum", PRICE), _agg("count", PRICE),
            _agg("max", PRICE)]
    result = _rows(partials.partial(table, ["g0"], aggs))
    assert result == [
        {"g0": "a", "p0": D("5.50"), "p1": D("5.50"), "n1": 2, "p2": D("5.50"), "p3": 2,
         "p4": D("4.00")},
        {"g0": "b", "p0": D("2.35"), "p1": D("2.35"), "n1": 2, "p2": D("2.35"), "p3": 2,
         "p4": D("2.25")}]
    final = partials.final(partials.merge(partials.partial(table, ["g0"], aggs), ["g0"], aggs),
                           aggs)
    assert [c.to_pylist() for c in final][1] in ([5.5 / 2, 2.35 / 2], [2.35 / 2, 5.5 / 2])


def test_slices_of_one_buffer_are_told_apart() -> None:
    """Same buffers at other offsets are other values."""
    values = pa.array([1, 2, 3, 4, 5, 6], pa.int64())
    table = pa.table({"g0": [0, 0, 0], "a0": values.slice(0, 3), "a1": values.slice(3, 3)})
    aggs = [_agg("sum", T.INT64), _agg("sum", T.INT64)]
    assert _rows(partials.partial(table, ["g0"], aggs)) == [{"g0": 0, "p0": 6, "p1": 15}]


def test_variance_family_over_one_column() -> None:
    values = pa.array([1.0, 2.0, 4.0, None, 8.0], pa.float64())
    table = pa.table({"g0": [0, 0, 0, 0, 0], "a0": values, "a1": values, "a2": values})
    aggs = [_agg("var_pop", T.FLOAT64), _agg("var_samp", T.FLOAT64), _agg("sum", T.FLOAT64)]
    merged = partials.merge(partials.partial(table, ["g0"], aggs), ["g0"], aggs)
    var_pop, var_samp, total = (c.to_pylist()[0] for c in partials.final(merged, aggs))
    mean = 15.0 / 4
    squares = sum((v - mean) ** 2 for v in (1.0, 2.0, 4.0, 8.0))
    assert abs(var_pop - squares / 4) < 1e-12 and abs(var_samp - squares / 3) < 1e-12
    assert total == 15.0


def test_counts_of_columns_without_nulls_are_the_row_count() -> None:
    with_null = pa.array([1, None, 3], pa.int64())
    table = pa.table({"g0": [0, 0, 1], "a0": pa.array([1, 2, 3], pa.int64()),
                      "a1": pa.array([True, True, True]), "a2": with_null,
                      "a3": pa.array([5.0, 6.0, 7.0])})
    aggs = [_agg("avg", T.INT64), AggCall("count_star", (), T.INT64), _agg("count", T.INT64),
            _agg("count", T.FLOAT64)]
    assert _rows(partials.partial(table, ["g0"], aggs)) == [
        {"g0": 0, "p0": 3, "n0": 2, "p1": 2, "p2": 1, "p3": 2},
        {"g0": 1, "p0": 3, "n0": 1, "p1": 1, "p2": 1, "p3": 1}]


def test_dictionary_columns_are_never_taken_for_one_another() -> None:
    """Two dictionary columns may share their indices' buffers and differ in dictionary."""
    indices = pa.array([0, 1, 0], pa.int32())
    first = pa.chunked_array([pa.DictionaryArray.from_arrays(indices, pa.array(["x", "y"]))])
    second = pa.chunked_array([pa.DictionaryArray.from_arrays(indices, pa.array(["p", "q"]))])
    assert partials._identity(first) is None and partials._identity(second) is None
    assert partials._identity(pa.chunked_array([indices])) == \
        partials._identity(pa.chunked_array([indices]))
