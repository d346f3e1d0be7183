"""Partial aggregates: a GROUP BY computed piecewise, each piece's groups merged later.

When every aggregate of a hash aggregate can be merged -- SUM, COUNT, MIN, MAX, AVG,
BOOL_AND, BOOL_OR, ANY_VALUE, and MIN / MAX DISTINCT (duplicates change nothing) -- the
operator need not hold its input: it reduces each chunk of input to one row per group (the
*partials*), merges the partials of different chunks by grouping them again, and turns the
merged partials into the aggregates' values at the end. The pieces are:

* :func:`partial` -- a table of keys ``g<i>`` and arguments ``a<i>`` grouped to partials:
  keys, then per aggregate ``p<i>`` (its partial value, for the variance family the mean)
  and for AVG and the variance family also ``n<i>`` (the count of values), for the
  variance family also ``m<i>`` (M2);
* :func:`merge` -- partials grouped by their keys once more (sums of sums and of counts, min
  of mins, ...), the same columns; :func:`disjoint` says when pieces share no group, so
  that their partials together are already merged (input sorted or clustered on a key, as
  ``lineitem`` on ``l_orderkey``);
* :func:`final` -- merged partials to the aggregates' values (AVG = sum / count; COUNT of a
  group without values is 0).

The variance family merges too: its partials are per group the count, mean and M2 (sum of
squared deviations from the mean), combined by Chan et al.'s parallel formula, so its values
equal a one-pass variance within float rounding. The other DISTINCT aggregates and
user-defined aggregates without ``merge`` cannot be merged this way (:func:`mergeable` says so); the operator then holds their argument
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
#: the variance family: (degrees of freedom subtracted, square root taken)
VARIANCE = {"var_pop": (0, False), "var_samp": (1, False),
            "stddev_pop": (0, True), "stddev_samp": (1, True)}
_POPULATION = pc.VarianceOptions(ddof=0)
_ROW = "__row"
#: integers of at most this magnitude are exact doubles
_EXACT_DOUBLE = 2 ** 53


def mergeable(aggs: Sequence[AggCall]) -> bool:
    """Can every aggregate of ``aggs`` be computed as partials merged later?"""
    for agg in aggs:
        if agg.function is not None:
            return False
        if agg.name == "avg" or agg.name in VARIANCE:
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
        if agg.name in VARIANCE:
            column = table.column(f"a{i}")
            if column.type != pa.float64():
                table = table.set_column(table.schema.get_field_index(f"a{i}"), f"a{i}",
                                         column.cast(pa.float64()))
            specs += [(f"a{i}", "mean", _SKIP_NULLS), (f"a{i}", "count", _VALID),
                      (f"a{i}", "variance", _POPULATION)]
            names += [f"a{i}_mean", f"a{i}_count", f"a{i}_variance"]
            continue
        function = _PARTIAL[agg.name][0]
        specs.append((f"a{i}", function, _options(function)))
        names.append(f"a{i}_{function}")
    specs, computed = _once_each(table, specs)
    grouped = table.group_by(keys, use_threads=use_threads).aggregate(specs)
    columns = [grouped.column(n) for n in computed]
    for i, agg in enumerate(aggs):
        if agg.name in VARIANCE:  # M2 = population variance * count
            at = names.index(f"a{i}_variance")
            counts = columns[names.index(f"a{i}_count")]
            columns[at] = pc.multiply(pc.fill_null(columns[at], 0.0),
                                      counts.cast(pa.float64()))
    return pa.table([grouped.column(k) for k in keys] + columns,
                    names=[*keys, *_partial_names(aggs)])


def _once_each(table: pa.Table, specs: list[tuple[str, str, Any]]
               ) -> tuple[list[tuple[str, str, Any]], list[str]]:
    """``specs`` without repeats, and per spec the name of the column computing it: an
    argument column holding the very same buffers as an earlier one (Q1 sums
    ``l_quantity`` and averages it) is aggregated once per function. Same buffers, type,
    offsets and lengths mean the same values, so the results are the same. Likewise the
    counts of columns without NULLs are all the group's row count (Q1's three AVGs and
    COUNT(*))."""
    first: dict[tuple[Any, ...], str] = {}
    unique: dict[tuple[str, str], tuple[str, str, Any]] = {}
    computed: list[str] = []
    for column, function, options in specs:
        values = table.column(column)
        identity = ("every row",) if function == "count" and not values.null_count \
            else _identity(values) or ("column", column)
        same = first.setdefault(identity, column)
        unique.setdefault((same, function), (same, function, options))
        computed.append(f"{same}_{function}")
    return list(unique.values()), computed


def _identity(column: pa.ChunkedArray) -> tuple[Any, ...] | None:
    """Where the column's values are in memory: equal for two columns only if they hold
    the same values (None for a dictionary column, whose dictionary its buffers omit)."""
    if pa.types.is_dictionary(column.type):
        return None
    return (str(column.type), *((chunk.offset, len(chunk),
                                 *(None if b is None else b.address for b in chunk.buffers()))
                                for chunk in column.chunks))


def disjoint(partials: Sequence[pa.Table], keys: list[str]) -> bool:
    """Whether no group occurs in two of ``partials`` (each with one row per group), so
    that their concatenation has one row per group too: true when, for some integer or
    date / time / timestamp key column without NULLs, the pieces' value ranges do not overlap. Costs
    one min/max per piece and key column."""
    if len(partials) < 2 or any(p.schema != partials[0].schema for p in partials):
        return False
    for key in keys:
        columns = [p.column(key) for p in partials]
        dtype = columns[0].type
        ordered = pa.types.is_integer(dtype) or pa.types.is_date(dtype) or \
            pa.types.is_timestamp(dtype) or pa.types.is_time(dtype)
        if not ordered or any(c.null_count for c in columns):
            continue
        ranges = sorted((r["min"].as_py(), r["max"].as_py())
                        for r in (pc.min_max(c) for c in columns if len(c)))
        if all(high < low for (_, high), (low, _) in zip(ranges, ranges[1:])):
            return True
    return False


def _partial_names(aggs: Sequence[AggCall]) -> list[str]:
    names: list[str] = []
    for i, agg in enumerate(aggs):
        names.append(f"p{i}")
        if agg.name == "avg":
            names.append(f"n{i}")
        elif agg.name in VARIANCE:
            names += [f"n{i}", f"m{i}"]
    return names


def merge(partials: pa.Table, keys: list[str], aggs: Sequence[AggCall],
          use_threads: bool = True) -> pa.Table:
    """Partials (of :func:`partial` or :func:`merge`) with one row per group."""
    specs: list[tuple[str, str, Any]] = []
    names: list[str] = []
    for i, agg in enumerate(aggs):
        if agg.name in VARIANCE:
            continue
        function = "sum" if agg.name == "avg" else _PARTIAL[agg.name][1]
        specs.append((f"p{i}", function, _options(function)))
        names.append(f"p{i}_{function}")
        if agg.name == "avg":
            specs.append((f"n{i}", "sum", _SKIP_NULLS))
            names.append(f"n{i}_sum")
    variances = [i for i, agg in enumerate(aggs) if agg.name in VARIANCE]
    if variances:
        partials = partials.append_column(_ROW, pa.array(np.arange(partials.num_rows)))
        specs.append((_ROW, "list", None))
    grouped = partials.group_by(keys, use_threads=use_threads).aggregate(specs)
    merged = dict(zip(names, (grouped.column(n) for n in names)))
    if variances:
        lists = grouped.column(f"{_ROW}_list").combine_chunks()
        rows = pc.list_flatten(lists)
        groups = pc.list_parent_indices(lists).to_numpy()
        for i in variances:
            counts, means, m2 = _chan(partials, i, rows, groups, grouped.num_rows)
            merged[f"p{i}"], merged[f"n{i}"], merged[f"m{i}"] = means, counts, m2
    columns = []
    for i, agg in enumerate(aggs):
        if agg.name in VARIANCE:
            columns += [merged[f"p{i}"], merged[f"n{i}"], merged[f"m{i}"]]
            continue
        function = "sum" if agg.name == "avg" else _PARTIAL[agg.name][1]
        columns.append(merged[f"p{i}_{function}"])
        if agg.name == "avg":
            columns.append(merged[f"n{i}_sum"])
    return pa.table([grouped.column(k) for k in keys] + columns,
                    names=[*keys, *_partial_names(aggs)])


def _chan(partials: pa.Table, index: int, rows: pa.Array, groups: np.ndarray,
          count: int) -> tuple[pa.Array, pa.Array, pa.Array]:
    """Count, mean and M2 of variance aggregate ``index`` per group, combined from the
    partials' rows (``rows[j]`` belongs to group ``groups[j]``) by Chan et al.'s parallel
    formula: M2 = sum of the pieces' M2 + sum of n * (piece mean - group mean)^2."""
    n = pc.fill_null(partials.column(f"n{index}").take(rows), 0).to_numpy().astype(np.float64)
    mean = pc.fill_null(partials.column(f"p{index}").take(rows), 0.0).to_numpy()
    m2 = pc.fill_null(partials.column(f"m{index}").take(rows), 0.0).to_numpy()
    totals = np.bincount(groups, weights=n, minlength=count)
    some = totals > 0
    # means are taken relative to one piece's mean of the group, so values far from zero
    # keep their digits (a sum of n * mean would lose them)
    reference = np.zeros(count)
    valued = n > 0
    reference[groups[valued]] = mean[valued]
    shifted = mean - reference[groups]
    offsets = np.bincount(groups, weights=n * shifted, minlength=count) / np.where(
        some, totals, 1.0)
    deviation = shifted - offsets[groups]
    group_m2 = np.bincount(groups, weights=m2 + n * deviation * deviation, minlength=count)
    return (pa.array(totals.astype(np.int64)), pa.array(reference + offsets, mask=~some),
            pa.array(group_m2))


def final(merged: pa.Table, aggs: Sequence[AggCall]) -> list[pa.ChunkedArray | pa.Array]:
    """The value of each aggregate per row of ``merged`` partials."""
    columns: list[pa.ChunkedArray | pa.Array] = []
    for i, agg in enumerate(aggs):
        value = merged.column(f"p{i}")
        if agg.name == "avg":
            value = _mean(value, pc.fill_null(merged.column(f"n{i}"), 0).to_numpy())
        elif agg.name in ("count", "count_star"):
            value = pc.fill_null(value, 0)
        elif agg.name in VARIANCE:
            value = _variance(agg.name, merged.column(f"n{i}"), merged.column(f"m{i}"))
        columns.append(value)
    return columns


def _variance(name: str, counts: pa.ChunkedArray, m2: pa.ChunkedArray) -> pa.Array:
    """The variance aggregate ``name`` of groups with ``counts`` values and sums of squared
    deviations ``m2``: NULL where a group has no more values than degrees of freedom."""
    ddof, root = VARIANCE[name]
    n = pc.fill_null(counts, 0).to_numpy().astype(np.float64)
    defined = n > ddof
    values = np.maximum(pc.fill_null(m2, 0.0).to_numpy(), 0.0) / np.where(
        defined, n - ddof, 1.0)
    return pa.array(np.sqrt(values) if root else values, pa.float64(), mask=~defined)


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
