"""Partial aggregates: a GROUP BY computed piecewise, each piece's groups merged later.

When every aggregate of a hash aggregate can be merged -- SUM, COUNT, MIN, MAX, AVG,
BOOL_AND, BOOL_OR, ANY_VALUE, and MIN / MAX DISTINCT (duplicates change nothing) -- the
operator need not hold its input: it reduces each chunk of input to one row per group (the
*partials*), merges the partials of different chunks by grouping them again, and turns the
merged partials into the aggregates' values at the end. The pieces are:

* :func:`partial` -- a table of keys ``g<i>`` and arguments ``a<i>`` grouped to partials:
  keys, then per aggregate ``p<i>`` (its partial value) and for AVG also ``n<i>`` (the
  count of values);
* :func:`merge` -- partials grouped by their keys once more (sums of sums and of counts, min
  of mins, ...), the same columns;
* :func:`final` -- merged partials to the aggregates' values (AVG = sum / count; COUNT of a
  group without values is 0).

The variance family, the other DISTINCT aggregates and user-defined aggregates cannot be
merged this way (:func:`mergeable` says so); the operator then holds their argument
columns and aggregates them at once.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner.expressions import AggCall
from flowsql.runtime.kernels.decimals import unscaled

_SKIP_NULLS = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
_VALID = pc.CountOptions("only_valid")

#: the Acero function of a mergeable aggregate's partial, and of the merge of partials
_PARTIAL = {"sum": ("sum", "sum"), "count": ("count", "sum"), "count_star": ("count", "sum"),
            "min": ("min", "min"), "max": ("max", "max"), "any_value": ("min", "min"),
            "bool_and": ("all", "all"), "bool_or": ("any", "any")}
_NOT_FOR_DISTINCT = {"sum", "count"}
#: integers of at most this magnitude are exact doubles
_EXACT_DOUBLE = 2 ** 53


def mergeable(aggs: Sequence[AggCall]) -> bool:
    """Can every aggregate of ``aggs`` be computed as partials merged later?"""
    for agg in aggs:
        if agg.function is not None:
            return False
        if agg.name == "avg":
            if agg.distinct:
                return False
        elif agg.name not in _PARTIAL or (agg.distinct and agg.name in _NOT_FOR_DISTINCT):
            return False
    return True


def _options(function: str) -> Any:
    return _VALID if function == "count" else _SKIP_NULLS


def partial(table: pa.Table, keys: list[str], aggs: Sequence[AggCall],
            use_threads: bool = True) -> pa.Table:
    """``table`` (``keys`` and arguments ``a<i>``; AVG's argument float64 or decimal)
    grouped to one row of partials per group."""
    specs: list[tuple[str, str, Any]] = []
    names: list[str] = []
    for i, agg in enumerate(aggs):
        if agg.name == "avg":
            specs += [(f"a{i}", "sum", _SKIP_NULLS), (f"a{i}", "count", _VALID)]
            names += [f"a{i}_sum", f"a{i}_count"]
            continue
        function = _PARTIAL[agg.name][0]
        specs.append((f"a{i}", function, _options(function)))
        names.append(f"a{i}_{function}")
    grouped = table.group_by(keys, use_threads=use_threads).aggregate(specs)
    return pa.table([grouped.column(k) for k in keys] + [grouped.column(n) for n in names],
                    names=[*keys, *_partial_names(aggs)])


def _partial_names(aggs: Sequence[AggCall]) -> list[str]:
    names: list[str] = []
    for i, agg in enumerate(aggs):
        names.append(f"p{i}")
        if agg.name == "avg":
            names.append(f"n{i}")
    return names


def merge(partials: pa.Table, keys: list[str], aggs: Sequence[AggCall],
          use_threads: bool = True) -> pa.Table:
    """Partials (of :func:`partial` or :func:`merge`) with one row per group."""
    specs: list[tuple[str, str, Any]] = []
    names: list[str] = []
    for i, agg in enumerate(aggs):
        function = "sum" if agg.name == "avg" else _PARTIAL[agg.name][1]
        specs.append((f"p{i}", function, _options(function)))
        names.append(f"p{i}_{function}")
        if agg.name == "avg":
            specs.append((f"n{i}", "sum", _SKIP_NULLS))
            names.append(f"n{i}_sum")
    grouped = partials.group_by(keys, use_threads=use_threads).aggregate(specs)
    return pa.table([grouped.column(k) for k in keys] + [grouped.column(n) for n in names],
                    names=[*keys, *_partial_names(aggs)])


def final(merged: pa.Table, aggs: Sequence[AggCall]) -> list[pa.ChunkedArray | pa.Array]:
    """The value of each aggregate per row of ``merged`` partials."""
    columns: list[pa.ChunkedArray | pa.Array] = []
    for i, agg in enumerate(aggs):
        value = merged.column(f"p{i}")
        if agg.name == "avg":
            value = _mean(value, pc.fill_null(merged.column(f"n{i}"), 0).to_numpy())
        elif agg.name in ("count", "count_star"):
            value = pc.fill_null(value, 0)
        columns.append(value)
    return columns


def _mean(sums: pa.ChunkedArray, counts: np.ndarray) -> pa.Array:
    """AVG as DOUBLE: ``sums / counts``, NULL where a group has no values.

    A decimal sum is exact, and so is the quotient's rounding: while the unscaled sum and
    ``count * 10^scale`` fit a double's 53 bits, one IEEE division of the two is the
    correctly rounded mean; beyond that each such group divides in Python decimals.
    """
    some = counts > 0
    divisors = np.where(some, counts, 1)
    column = sums.combine_chunks() if sums.num_chunks != 1 else sums.chunk(0)
    if not pa.types.is_decimal(column.type):
        means = pc.fill_null(column, 0).cast(pa.float64()).to_numpy() / divisors
        return pa.array(means, pa.float64(), mask=~some)
    scale = column.type.scale
    units, fits = unscaled(column.cast(pa.decimal128(38, scale)))
    means = units.astype(np.float64) / (divisors * 10.0 ** scale)
    exact = fits & (np.abs(units) < _EXACT_DOUBLE) & (divisors * 10 ** scale < _EXACT_DOUBLE)
    if not fits or not bool(np.all(exact | ~some)):
        with decimal.localcontext() as context:
            context.prec = 60
            for row in np.flatnonzero(~exact & some):
                total = column[int(row)].as_py()
                means[row] = float(total / decimal.Decimal(int(divisors[row])))
    return pa.array(means, pa.float64(), mask=~some)
