"""Result verification: do two Arrow tables hold the same answer to a query?

Engines legitimately disagree on incidental things, so the comparison is deliberately
tolerant about them and strict about the answer:

* column names and physical types may differ; columns are matched by position;
* exact numbers (integers of any width, decimals of any scale) compare exactly by value, so
  ``1.10`` equals ``1.1`` but not ``1.11``;
* as soon as one side of a numeric column is floating point (``avg`` is a double in DuckDB and
  may be a decimal elsewhere) both sides compare as float64 with a relative tolerance, and an
  absolute one of 1e-12 near zero;
* strings, binaries, booleans, dates, times and timestamps compare by value;
* NULL equals NULL, NaN equals NaN.

Without ``ordered`` both tables are sorted first by a canonical key (exact columns before float
columns, so values equal within tolerance cannot reorder rows that differ elsewhere), which
compares them as multisets. With ``ordered`` rows compare position by position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from flowsql.errors import SqlSyntaxError

MAX_REPORTED_ROWS = 10
ABSOLUTE_TOLERANCE = 1e-12

# How a column compares: exactly after a cast to a common type, numerically with tolerance,
# or value by value in Python for types pyarrow.compute cannot compare (nested types).
_EXACT, _TOLERANT, _PYTHON = "exact", "tolerant", "python"


@dataclass(frozen=True)
class _ColumnPair:
    """Both sides of one result column, cast to a type in which they compare, next to the
    original values that differences are reported with."""

    name: str
    actual: pa.Array
    expected: pa.Array
    mode: str
    shown_actual: pa.Array
    shown_expected: pa.Array


def is_ordered_query(sql: str) -> bool:
    """True when the query's outermost level has an ORDER BY, i.e. its row order is part of
    the answer. ORDER BY inside subqueries does not count."""
    try:
        node: exp.Expr | None = sqlglot.parse_one(sql)
    except sqlglot.errors.ParseError as exc:
        raise SqlSyntaxError(f"cannot parse query to find its ORDER BY: {exc}") from exc
    while node is not None:
        if node.args.get("order") is not None:
            return True
        node = node.this if isinstance(node, exp.Subquery | exp.Paren) else None
    return False


def compare_tables(actual: pa.Table, expected: pa.Table, ordered: bool,
                   rel_tol: float = 1e-9) -> list[str]:
    """Human-readable differences between two results; an empty list means they are equal.

    At most :data:`MAX_REPORTED_ROWS` differing rows are listed, each with its row number
    (position in the result when ``ordered``, in the canonical sort order otherwise) and both
    values of every differing column.
    """
    if actual.num_columns != expected.num_columns:
        return [f"column count differs: actual {actual.num_columns} {actual.column_names}, "
                f"expected {expected.num_columns} {expected.column_names}"]
    problems: list[str] = []
    pairs: list[_ColumnPair] = []
    for index in range(actual.num_columns):
        pair_or_problem = _pair_column(index, actual, expected)
        if isinstance(pair_or_problem, str):
            problems.append(pair_or_problem)
        else:
            pairs.append(pair_or_problem)
    if actual.num_rows != expected.num_rows:
        problems.append(f"row count differs: actual {actual.num_rows}, "
                        f"expected {expected.num_rows}")
    if problems:
        return problems
    if not ordered:
        pairs = _sorted_canonically(pairs)
    return _row_differences(pairs, rel_tol, "row" if ordered else "sorted row")


# --- pairing columns -----------------------------------------------------------------------

def _plain(column: pa.ChunkedArray) -> pa.Array:
    """One contiguous array in a plain layout: dictionaries decoded, views made offsets,
    extension types unwrapped."""
    array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if isinstance(array, pa.ExtensionArray):
        array = array.storage
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    # View layouts (the TPC-H files store strings as string_view) lack a take kernel.
    if pa.types.is_string_view(array.type):
        array = pc.cast(array, pa.large_string())
    elif pa.types.is_binary_view(array.type):
        array = pc.cast(array, pa.large_binary())
    return array


def _kind(data_type: pa.DataType) -> str:
    checks = (
        ("null", pa.types.is_null), ("integer", pa.types.is_integer),
        ("decimal", pa.types.is_decimal), ("float", pa.types.is_floating),
        ("string", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)),
        ("binary", lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t)
         or pa.types.is_fixed_size_binary(t)),
        ("boolean", pa.types.is_boolean), ("date", pa.types.is_date),
        ("timestamp", pa.types.is_timestamp), ("time", pa.types.is_time),
        ("duration", pa.types.is_duration),
    )
    for kind, check in checks:
        if check(data_type):
            return kind
    return "other"


_UNIT_RANK = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def _finer_unit(*types: pa.DataType) -> str:
    units = [t.unit for t in types if hasattr(t, "unit")]
    return max(units, key=_UNIT_RANK.__getitem__) if units else "us"


def _common_type(left: pa.DataType, right: pa.DataType) -> tuple[pa.DataType, str] | None:
    """The type both sides are cast to and how they then compare; None if incomparable."""
    kinds = {_kind(left), _kind(right)}
    if kinds <= {"integer", "decimal"}:
        scale = max(getattr(t, "scale", 0) for t in (left, right))
        return pa.decimal128(38, scale), _EXACT
    if kinds <= {"integer", "decimal", "float"}:
        return pa.float64(), _TOLERANT
    if kinds == {"string"}:
        return pa.large_string(), _EXACT
    if kinds == {"binary"}:
        return pa.large_binary(), _EXACT
    if kinds == {"boolean"}:
        return pa.bool_(), _EXACT
    if kinds == {"date"}:
        return pa.date32(), _EXACT
    if kinds <= {"date", "timestamp"}:
        zone = next((t.tz for t in (left, right) if getattr(t, "tz", None)), None)
        return pa.timestamp(_finer_unit(left, right), tz="UTC" if zone else None), _EXACT
    if kinds == {"time"}:
        return pa.time64("ns"), _EXACT
    if kinds == {"duration"}:
        return pa.duration(_finer_unit(left, right)), _EXACT
    if left == right:
        return left, _PYTHON
    return None


def _cast(array: pa.Array, target: pa.DataType) -> pa.Array:
    if array.type == target:
        return array
    try:
        return pc.cast(array, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        # Exact numbers too wide for decimal128 at the common scale still fit decimal256.
        if pa.types.is_decimal(target):
            return pc.cast(array, pa.decimal256(76, target.scale))
        raise


def _pair_column(index: int, actual: pa.Table, expected: pa.Table) -> _ColumnPair | str:
    name = actual.column_names[index]
    shown_left = left = _plain(actual.column(index))
    shown_right = right = _plain(expected.column(index))
    # An all-NULL column of type null (e.g. a bare NULL literal) takes the other side's type.
    if pa.types.is_null(left.type):
        left = pa.nulls(len(left), right.type)
    if pa.types.is_null(right.type):
        right = pa.nulls(len(right), left.type)
    common = _common_type(left.type, right.type)
    if common is None:
        return (f"column {index + 1} ({name}): cannot compare actual type {left.type} "
                f"with expected type {right.type}")
    target, mode = common
    try:
        left, right = _cast(left, target), _cast(right, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        return f"column {index + 1} ({name}): cannot bring both sides to {target}: {exc}"
    if pa.types.is_decimal(left.type) and left.type != right.type:
        wide = pa.decimal256(76, target.scale)
        left, right = _cast(left, wide), _cast(right, wide)
    return _ColumnPair(name, left, right, mode, shown_left, shown_right)


# --- canonical order -----------------------------------------------------------------------

def _sorted_canonically(pairs: Sequence[_ColumnPair]) -> list[_ColumnPair]:
    keyed = [i for i, p in enumerate(pairs) if p.mode == _EXACT]
    keyed += [i for i, p in enumerate(pairs) if p.mode == _TOLERANT]
    if not keyed:
        return list(pairs)

    def order(side: str) -> pa.Array:
        table = pa.table({f"c{i}": getattr(pairs[i], side) for i in keyed})
        return pc.sort_indices(table, sort_keys=[(f"c{i}", "ascending", "at_end")
                                                 for i in keyed])

    actual_order, expected_order = order("actual"), order("expected")
    return [_ColumnPair(p.name, p.actual.take(actual_order), p.expected.take(expected_order),
                        p.mode, p.shown_actual.take(actual_order),
                        p.shown_expected.take(expected_order)) for p in pairs]


# --- row comparison ------------------------------------------------------------------------

def _same_values(pair: _ColumnPair, rel_tol: float) -> np.ndarray:
    """Boolean mask: does row i hold the same value on both sides (NULL = NULL)?"""
    left, right = pair.actual, pair.expected
    if pair.mode == _PYTHON:
        return np.array([a == b for a, b in zip(left.to_pylist(), right.to_pylist())],
                        dtype=bool)
    if pair.mode == _TOLERANT:
        bound = pc.max_element_wise(
            pc.multiply(pc.max_element_wise(pc.abs(left), pc.abs(right)), rel_tol),
            ABSOLUTE_TOLERANCE)
        close = pc.less_equal(pc.abs(pc.subtract(left, right)), bound)
        same = pc.or_kleene(pc.or_kleene(pc.equal(left, right), close),
                            pc.and_(pc.is_nan(left), pc.is_nan(right)))
    else:
        same = pc.equal(left, right)
    both_null = pc.and_(pc.is_null(left), pc.is_null(right))
    return pc.or_(pc.fill_null(same, False), both_null).to_numpy(zero_copy_only=False)


def _show(value: object) -> str:
    if value is None:
        return "NULL"
    return repr(value) if isinstance(value, str | bytes) else str(value)


def _row_differences(pairs: Sequence[_ColumnPair], rel_tol: float, label: str) -> list[str]:
    if not pairs or len(pairs[0].actual) == 0:
        return []
    same = np.column_stack([_same_values(pair, rel_tol) for pair in pairs])
    bad_rows = np.flatnonzero(~same.all(axis=1))
    messages = []
    for row in bad_rows[:MAX_REPORTED_ROWS].tolist():
        cells = [f"column {c + 1} ({pairs[c].name}): "
                 f"actual {_show(pairs[c].shown_actual[row].as_py())}, "
                 f"expected {_show(pairs[c].shown_expected[row].as_py())}"
                 for c in np.flatnonzero(~same[row]).tolist()]
        messages.append(f"{label} {row + 1}: " + "; ".join(cells))
    if len(bad_rows) > MAX_REPORTED_ROWS:
        messages.append(f"... and {len(bad_rows) - MAX_REPORTED_ROWS} more differing rows "
                        f"({len(bad_rows)} of {len(pairs[0].actual)})")
    return messages
