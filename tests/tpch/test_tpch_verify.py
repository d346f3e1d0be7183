"""compare_tables decides whether an engine's answer equals DuckDB's: it must catch every real
difference (a cent in a decimal, a missing duplicate row, a NULL for a value) while ignoring
what legitimately varies between engines (names, widths, row order of unordered queries)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from flowsql.errors import SqlSyntaxError
from flowsql.tpch.verify import MAX_REPORTED_ROWS, compare_tables, is_ordered_query


def dec(values: list[str | None], precision: int = 15, scale: int = 2) -> pa.Array:
    return pa.array([None if v is None else Decimal(v) for v in values],
                    pa.decimal128(precision, scale))


def test_identical_tables_are_equal() -> None:
    table = pa.table({"k": ["a", "b"], "v": dec(["1.10", "2.00"])})
    assert compare_tables(table, table, ordered=True) == []


def test_unordered_ignores_row_order_but_ordered_does_not() -> None:
    actual = pa.table({"k": ["b", "a", "c"], "v": [2, 1, 3]})
    expected = pa.table({"k": ["a", "b", "c"], "v": [1, 2, 3]})
    assert compare_tables(actual, expected, ordered=False) == []
    differences = compare_tables(actual, expected, ordered=True)
    assert len(differences) == 2
    assert differences[0].startswith("row 1:")
    assert "actual 'b', expected 'a'" in differences[0]


def test_unordered_compares_multisets() -> None:
    actual = pa.table({"v": [1, 1, 2]})
    expected = pa.table({"v": [1, 2, 2]})
    differences = compare_tables(actual, expected, ordered=False)
    assert differences == ["sorted row 2: column 1 (v): actual 1, expected 2"]


def test_decimals_compare_exactly() -> None:
    actual = pa.table({"v": dec(["1.10"])})
    assert compare_tables(actual, pa.table({"v": dec(["1.11"])}), ordered=True) == [
        "row 1: column 1 (v): actual 1.10, expected 1.11"]
    # A tolerance never hides a decimal difference.
    assert compare_tables(actual, pa.table({"v": dec(["1.11"])}), ordered=True,
                          rel_tol=0.1) != []


def test_decimals_of_different_scale_and_precision_compare_by_value() -> None:
    actual = pa.table({"v": dec(["1.10", "-3.00"], 15, 2)})
    expected = pa.table({"v": dec(["1.1000", "-3.0000"], 38, 4)})
    assert compare_tables(actual, expected, ordered=True) == []


def test_integers_of_any_width_and_integral_decimals_compare_by_value() -> None:
    actual = pa.table({"n": pa.array([64, 86], pa.int32())})
    assert compare_tables(actual, pa.table({"n": pa.array([64, 86], pa.int64())}),
                          ordered=True) == []
    # DuckDB's sum over integers is a HUGEINT, which arrives as decimal128(38, 0).
    assert compare_tables(actual, pa.table({"n": dec(["64", "86"], 38, 0)}), ordered=True) == []
    assert compare_tables(actual, pa.table({"n": dec(["64", "87"], 38, 0)}),
                          ordered=True) != []


def test_floats_compare_with_relative_tolerance() -> None:
    expected = pa.table({"v": [1000.0, 2.5]})
    close = pa.table({"v": [1000.0 * (1 + 1e-12), 2.5]})
    far = pa.table({"v": [1000.0 * (1 + 1e-6), 2.5]})
    assert compare_tables(close, expected, ordered=True) == []
    assert compare_tables(far, expected, ordered=True) != []
    assert compare_tables(far, expected, ordered=True, rel_tol=1e-5) == []


def test_absolute_tolerance_applies_near_zero_only() -> None:
    expected = pa.table({"v": [0.0]})
    assert compare_tables(pa.table({"v": [1e-13]}), expected, ordered=True) == []
    assert compare_tables(pa.table({"v": [1e-9]}), expected, ordered=True) != []


def test_decimal_against_float_compares_numerically() -> None:
    # avg() is a double in DuckDB; an engine may return a decimal instead.
    actual = pa.table({"avg": dec(["25.575154611454693"], 38, 15)})
    assert compare_tables(actual, pa.table({"avg": [25.575154611454693]}), ordered=True) == []
    assert compare_tables(actual, pa.table({"avg": [25.5752]}), ordered=True) != []


def test_nulls_equal_nulls_only() -> None:
    expected = pa.table({"v": dec(["1.00", None]), "s": ["x", None]})
    assert compare_tables(pa.table({"v": dec(["1.00", None]), "s": ["x", None]}), expected,
                          ordered=True) == []
    differences = compare_tables(pa.table({"v": dec(["1.00", "0.00"]), "s": ["x", None]}),
                                 expected, ordered=True)
    assert differences == ["row 2: column 1 (v): actual 0.00, expected NULL"]
    assert compare_tables(pa.table({"f": [None, 1.0]}), pa.table({"f": [1.0, None]}),
                          ordered=True) != []


def test_null_typed_column_matches_all_null_column() -> None:
    actual = pa.table({"avg_yearly": pa.nulls(1)})
    assert compare_tables(actual, pa.table({"avg_yearly": pa.array([None], pa.float64())}),
                          ordered=True) == []
    assert compare_tables(actual, pa.table({"avg_yearly": [1.5]}), ordered=True) != []


def test_nan_equals_nan() -> None:
    table = pa.table({"v": [float("nan"), 1.0]})
    assert compare_tables(table, pa.table({"v": [float("nan"), 1.0]}), ordered=False) == []
    assert compare_tables(table, pa.table({"v": [2.0, 1.0]}), ordered=True) != []


def test_column_count_mismatch_is_reported() -> None:
    differences = compare_tables(pa.table({"a": [1], "b": [2]}), pa.table({"a": [1]}),
                                 ordered=False)
    assert len(differences) == 1
    assert "column count differs: actual 2" in differences[0]


def test_row_count_mismatch_is_reported() -> None:
    differences = compare_tables(pa.table({"a": [1, 2]}), pa.table({"a": [1, 2, 3]}),
                                 ordered=False)
    assert differences == ["row count differs: actual 2, expected 3"]


def test_columns_match_by_position_not_name() -> None:
    actual = pa.table({"sum(l_quantity)": [1], "x": ["a"]})
    expected = pa.table({"sum_qty": [1], "y": ["a"]})
    assert compare_tables(actual, expected, ordered=True) == []


def test_incomparable_types_are_reported() -> None:
    differences = compare_tables(pa.table({"v": ["1"]}), pa.table({"v": [1]}), ordered=True)
    assert len(differences) == 1
    assert "column 1 (v): cannot compare" in differences[0]


def test_string_layouts_compare_equal_and_values_exactly() -> None:
    view = pa.table({"s": pa.array(["BUILDING", "ASIA"], pa.string_view())})
    assert compare_tables(view, pa.table({"s": pa.array(["ASIA", "BUILDING"], pa.large_string())}),
                          ordered=False) == []
    dictionary = pa.table({"s": pa.array(["ASIA", "BUILDING"]).dictionary_encode()})
    assert compare_tables(dictionary, view, ordered=False) == []
    assert compare_tables(view, pa.table({"s": ["BUILDING", "asia"]}), ordered=True) != []


def test_dates_and_timestamps_compare_by_value() -> None:
    day = dt.date(1995, 3, 15)
    date32 = pa.table({"d": pa.array([day], pa.date32())})
    assert compare_tables(date32, pa.table({"d": pa.array([day], pa.date64())}),
                          ordered=True) == []
    midnight = pa.array([dt.datetime(1995, 3, 15)], pa.timestamp("us"))
    assert compare_tables(date32, pa.table({"d": midnight}), ordered=True) == []
    assert compare_tables(date32, pa.table({"d": pa.array([dt.date(1995, 3, 16)])}),
                          ordered=True) != []


def test_near_equal_floats_do_not_reorder_rows_that_differ_elsewhere() -> None:
    actual = pa.table({"k": ["a", "b"], "v": [1.0 + 1e-12, 1.0]})
    expected = pa.table({"k": ["a", "b"], "v": [1.0, 1.0 + 1e-12]})
    assert compare_tables(actual, expected, ordered=False) == []


def test_report_is_capped_and_counts_the_rest() -> None:
    actual = pa.table({"v": list(range(25))})
    expected = pa.table({"v": [v + 1 for v in range(25)]})
    differences = compare_tables(actual, expected, ordered=True)
    assert len(differences) == MAX_REPORTED_ROWS + 1
    assert differences[0] == "row 1: column 1 (v): actual 0, expected 1"
    assert differences[-1] == "... and 15 more differing rows (25 of 25)"


def test_empty_results_are_equal() -> None:
    empty = pa.table({"v": pa.array([], pa.int64())})
    assert compare_tables(empty, empty, ordered=False) == []


@pytest.mark.parametrize(("sql", "ordered"), [
    ("select a from t order by a", True),
    ("select a from t", False),
    ("select a from (select a from t order by a limit 3) s", False),
    ("with w as (select a from t) select a from w order by a desc", True),
    ("select a from t union all select b from u order by 1", True),
    ("(select a from t union select b from u) order by 1", True),
    ("(select a from t order by a)", True),
    ("select a from t where a in (select b from u order by b)", False),
])
def test_is_ordered_query_looks_at_the_outermost_level(sql: str, ordered: bool) -> None:
    assert is_ordered_query(sql) is ordered


def test_is_ordered_query_rejects_unparsable_text() -> None:
    with pytest.raises(SqlSyntaxError):
        is_ordered_query("select from from")
