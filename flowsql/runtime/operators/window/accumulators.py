"""Accumulators of count / count_star / sum / min / max / avg / variances as Arrow columns.

An aggregate is kept as one or two accumulator columns per group so that partial results
merge associatively: count and count_star keep a count (merged by sum), sum keeps a sum
(NULL until a non-NULL value is seen), min / max keep the extreme, avg keeps a float64 sum
and a count, VAR_* / STDDEV_* keep a float64 sum, sum of squares and count
(``kernels.variance``). COUNT / SUM / AVG with DISTINCT keep the set of distinct non-NULL values
instead (a list column, merged by set union), which is what makes them mergeable across
slices and sessions: a value seen in two slices of one window counts once. MIN / MAX with
DISTINCT are the plain MIN / MAX. Three steps, each one Acero group-by over the whole batch
(plus, for the value sets, one group-by over the exploded values):

* ``partial`` -- rows with argument columns ``x<i>`` -> accumulators per group;
* ``merge``   -- rows of accumulators (state and partials concatenated) -> one row per group;
* ``finish``  -- accumulators -> the aggregate values (avg = sum / count).

A user-defined aggregate (called once per group with the group's arrays, see
``runtime.user_functions.aggregate``) keeps the rows themselves: one list column per
argument (Acero's ``list``), merged by concatenation, and the function runs at ``finish``
over each group's lists -- so it sees every row of a window however the rows were sliced.

Result types: counts int64; sum as Arrow's sum (int64, uint64, float64, decimal); min/max
the argument type; avg float64.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.kernels.variance import VARIANCE_AGGREGATES, variance
from flowsql.runtime.operators.window.window_specs import USER_AGGREGATE, AggregateSpec
from flowsql.runtime.user_functions.aggregate import call_per_group

_SKIP_NULLS = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
_COUNT_VALID = pc.CountOptions(mode="only_valid")
#: partial / merge function of a value-set accumulator (a DISTINCT aggregate)
DISTINCT = "distinct"
#: partial / merge function of a row-list accumulator (a user-defined aggregate)
ROWS_LIST = "list"
_ROWS = "__rows"


@dataclass(frozen=True)
class _Part:
    """One accumulator column: how partials compute it and how they merge."""

    name: str
    argument: str | None  # x<i>, or None for count_all
    partial: str
    merge: str
    dtype: pa.DataType
    output: pa.DataType | None = None  # the value's type when it differs from ``dtype``


class Accumulators:
    """The accumulator layout of a list of aggregates over one input schema."""

    def __init__(self, aggregates: Sequence[AggregateSpec], input_schema: pa.Schema) -> None:
        self.aggregates = tuple(aggregates)
        self._parts: list[list[_Part]] = []
        for index, agg in enumerate(self.aggregates):
            if agg.function == USER_AGGREGATE:
                self._parts.append(_user_parts(index, agg, input_schema))
                continue
            arg_type = input_schema.field(agg.column).type if agg.column is not None else None
            self._parts.append(_parts_of(index, agg, arg_type))

    @property
    def fields(self) -> list[pa.Field]:
        """The accumulator columns as stored in state."""
        return [pa.field(p.name, p.dtype) for parts in self._parts for p in parts]

    @property
    def merge_parts(self) -> list[tuple[str, str, pa.DataType]]:
        """(accumulator column, merge function, type) of every accumulator column."""
        return [(p.name, p.merge, p.dtype) for parts in self._parts for p in parts]

    @property
    def output_fields(self) -> list[pa.Field]:
        fields = []
        for agg, parts in zip(self.aggregates, self._parts):
            if agg.user is not None:
                assert agg.user.result_type is not None
                fields.append(pa.field(agg.name, agg.user.result_type))
                continue
            dtype = (pa.float64() if agg.function in ("avg", *VARIANCE_AGGREGATES)
                     else parts[0].output or parts[0].dtype)
            fields.append(pa.field(agg.name, dtype))
        return fields

    def arguments(self, batch: pa.RecordBatch) -> dict[str, pa.Array]:
        """The argument column ``x<i>`` of every aggregate that has one."""
        arguments = {}
        for i, agg in enumerate(self.aggregates):
            if agg.user is not None:
                for j, column in enumerate(agg.argument_columns):
                    arguments[f"x{i}_{j}"] = batch.column(column)
                continue
            if agg.column is not None:
                arguments[f"x{i}"] = batch.column(agg.column)
                if agg.function in ("avg", *VARIANCE_AGGREGATES):
                    arguments[f"x{i}_float"] = pc.cast(batch.column(agg.column), pa.float64())
                if agg.function in VARIANCE_AGGREGATES:
                    value = arguments[f"x{i}_float"]
                    arguments[f"x{i}_square"] = pc.multiply(value, value)
        return arguments

    def partial(self, rows: pa.Table, group_by: list[str]) -> pa.Table:
        specs: list[tuple[object, ...]] = []
        for parts in self._parts:
            for p in parts:
                if p.argument is None:
                    specs.append(([], "count_all"))
                elif p.partial == ROWS_LIST:
                    specs.append((p.argument, ROWS_LIST))
                else:
                    specs.append((p.argument, p.partial,
                                  _COUNT_VALID if p.partial in ("count", DISTINCT)
                                  else _SKIP_NULLS))
        return self._grouped(rows, group_by, specs)

    def merge(self, rows: pa.Table, group_by: list[str],
              extra: Sequence[tuple[str, str]] = ()) -> pa.Table:
        """One row per group; ``extra`` adds (column, function) aggregates kept by name."""
        parts = [p for group in self._parts for p in group]
        plain = [p for p in parts if p.merge not in (DISTINCT, ROWS_LIST)]
        specs: list[tuple[object, ...]] = [(p.name, p.merge, _SKIP_NULLS) for p in plain]
        specs.extend((column, function, _SKIP_NULLS) for column, function in extra)
        sets = len(plain) < len(parts)
        if sets:  # which rows each group merges, to unite their value sets after
            rows = rows.append_column(_ROWS, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
            specs.append((_ROWS, "list"))
        result = rows.group_by(group_by, use_threads=False).aggregate(specs)
        columns = dict(zip([p.name for p in plain] + [c for c, _ in extra] + [_ROWS] * sets,
                           _last(result.columns, len(specs))))
        if sets:
            members = result.column(len(result.columns) - 1).combine_chunks()
            for p in parts:
                if p.merge == DISTINCT:
                    columns[p.name] = _united(rows.column(p.name), members, p.dtype)
                elif p.merge == ROWS_LIST:
                    columns[p.name] = _concatenated(rows.column(p.name), members, p.dtype)
        names = [p.name for p in parts] + [c for c, _ in extra]
        return pa.Table.from_arrays(
            [result.column(k) for k in group_by] + [columns[n] for n in names],
            names=group_by + names)

    def finish(self, rows: pa.Table) -> list[pa.ChunkedArray]:
        values = []
        for agg, parts in zip(self.aggregates, self._parts):
            if agg.user is not None:
                values.append(pa.chunked_array([_finish_user(agg, parts, rows)]))
            elif parts[0].merge == DISTINCT:
                values.append(_finish_set(agg.function, rows.column(parts[0].name),
                                          parts[0].output))
            elif agg.function == "avg":
                total, count = rows.column(parts[0].name), rows.column(parts[1].name)
                values.append(pc.divide(total, pc.cast(pc.if_else(
                    pc.equal(count, 0), None, count), pa.float64())))
            elif agg.function in VARIANCE_AGGREGATES:
                total, squares, count = (_numbers(rows.column(p.name)) for p in parts)
                values.append(pa.chunked_array([variance(agg.function, count, total, squares)]))
            else:
                values.append(rows.column(parts[0].name))
        return values

    def _grouped(self, rows: pa.Table, group_by: list[str],
                 specs: Sequence[tuple[object, ...]]) -> pa.Table:
        result = rows.group_by(group_by, use_threads=False).aggregate(specs)
        names = [p.name for parts in self._parts for p in parts]
        columns = [c.cast(f.type) for c, f in zip(_last(result.columns, len(specs)), self.fields)]
        return pa.Table.from_arrays([result.column(k) for k in group_by] + columns,
                                    names=group_by + names)


def _last(columns: list[pa.ChunkedArray], count: int) -> list[pa.ChunkedArray]:
    """The last ``count`` columns of a group-by result (its aggregates; none for a
    GROUP BY without aggregates, where ``columns[-0:]`` would be every column)."""
    return columns[len(columns) - count:]


def _parts_of(index: int, agg: AggregateSpec, arg_type: pa.DataType | None) -> list[_Part]:
    x = f"x{index}"
    name = f"a{index}"
    if agg.distinct and agg.function in ("count", "sum", "avg"):
        assert arg_type is not None
        output = {"count": pa.int64(), "sum": _sum_type(arg_type), "avg": pa.float64()}
        return [_Part(name, x, DISTINCT, DISTINCT, pa.list_(arg_type),
                      output[agg.function])]
    if agg.function in ("count", "count_star"):
        return [_Part(name, None if agg.function == "count_star" else x, "count", "sum",
                      pa.int64())]
    if agg.function == "sum":
        return [_Part(name, x, "sum", "sum", _sum_type(arg_type))]
    if agg.function in ("min", "max"):
        return [_Part(name, x, agg.function, agg.function, arg_type)]
    if agg.function in VARIANCE_AGGREGATES:
        return [_Part(f"{name}_sum", f"{x}_float", "sum", "sum", pa.float64()),
                _Part(f"{name}_square", f"{x}_square", "sum", "sum", pa.float64()),
                _Part(f"{name}_count", x, "count", "sum", pa.int64())]
    return [_Part(f"{name}_sum", f"{x}_float", "sum", "sum", pa.float64()),
            _Part(f"{name}_count", x, "count", "sum", pa.int64())]


def _user_parts(index: int, agg: AggregateSpec, schema: pa.Schema) -> list[_Part]:
    """One row-list accumulator per argument of a user-defined aggregate."""
    return [_Part(f"a{index}_{j}", f"x{index}_{j}", ROWS_LIST, ROWS_LIST,
                  pa.list_(schema.field(column).type))
            for j, column in enumerate(agg.argument_columns)]


def _concatenated(lists: pa.ChunkedArray, members: pa.ListArray,
                  dtype: pa.DataType) -> pa.ListArray:
    """Per group, the rows of the lists of its member rows (``members``: the row numbers
    of each group), one after another."""
    taken = lists.combine_chunks().take(members.flatten())
    lengths = pc.list_value_length(taken).fill_null(0).to_numpy()
    group = pc.list_parent_indices(members).to_numpy()
    per_group = np.bincount(group, weights=lengths, minlength=len(members)).astype(np.int64)
    offsets = np.zeros(len(members) + 1, dtype=np.int32)
    np.cumsum(per_group, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), taken.flatten(), type=dtype)


def _finish_user(agg: AggregateSpec, parts: list[_Part], rows: pa.Table) -> pa.Array:
    """The user-defined aggregate over each group's rows (one call per group)."""
    assert agg.user is not None
    lists = [rows.column(p.name).combine_chunks() for p in parts]
    if lists:
        lengths = pc.list_value_length(lists[0]).fill_null(0).to_numpy()
    else:
        lengths = np.zeros(rows.num_rows, dtype=np.int64)
    offsets = np.zeros(rows.num_rows + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return call_per_group(agg.user, [column.flatten() for column in lists], offsets,
                          lambda group: f"a window's group {group}")


def _numbers(column: pa.ChunkedArray) -> np.ndarray:
    """A sum or count accumulator as numbers (NULL -- no value seen -- as 0)."""
    return pc.fill_null(column, 0).to_numpy()


def _united(sets: pa.ChunkedArray, members: pa.ListArray, dtype: pa.DataType) -> pa.ListArray:
    """Per group, the union of the value sets ``sets`` of its member rows (``members``:
    the row numbers of each group), as one list of distinct values per group."""
    taken = sets.combine_chunks().take(members.flatten())
    group = pc.list_parent_indices(members).to_numpy()[
        pc.list_parent_indices(taken).to_numpy()]
    pairs = pa.table({"g": pa.array(group, pa.int64()), "v": taken.flatten()})
    pairs = pairs.group_by(["g", "v"], use_threads=False).aggregate([]).sort_by("g")
    offsets = np.searchsorted(pairs.column("g").to_numpy(),
                              np.arange(len(members) + 1), side="left").astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pairs.column("v").combine_chunks(),
                                    type=dtype)


def _finish_set(function: str, sets: pa.ChunkedArray, output: pa.DataType | None
                ) -> pa.Array:
    """COUNT / SUM / AVG of each row's value set; SUM and AVG are NULL for an empty set."""
    lists = sets.combine_chunks()
    counts = pc.list_value_length(lists).fill_null(0)
    if function == "count":
        return counts.cast(pa.int64())
    n = len(lists)
    values = lists.flatten()
    if function == "avg":
        values = values.cast(pa.float64())
    parents = pa.array(pc.list_parent_indices(lists).to_numpy().astype(np.int64))
    sums = pa.table({"g": parents, "v": values}).group_by(
        "g", use_threads=False).aggregate([("v", "sum")])
    position = np.full(n, -1, np.int64)
    position[sums.column("g").to_numpy()] = np.arange(sums.num_rows)
    total = sums.column(1).combine_chunks().take(pa.array(position, mask=position < 0))
    if function == "sum":
        assert output is not None
        return total.cast(output)
    return pc.divide(total, pc.cast(pc.if_else(pc.equal(counts, 0), None, counts),
                                    pa.float64()))


def _sum_type(arg_type: pa.DataType) -> pa.DataType:
    if pa.types.is_floating(arg_type):
        return pa.float64()
    if pa.types.is_unsigned_integer(arg_type):
        return pa.uint64()
    if pa.types.is_integer(arg_type) or pa.types.is_boolean(arg_type):
        return pa.int64()
    if pa.types.is_decimal(arg_type):
        return pa.decimal128(38, arg_type.scale)
    return arg_type
