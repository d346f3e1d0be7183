"""Accumulators of count / count_star / sum / min / max / avg as Arrow columns.

An aggregate is kept as one or two accumulator columns per group so that partial results
merge associatively: count and count_star keep a count (merged by sum), sum keeps a sum
(NULL until a non-NULL value is seen), min / max keep the extreme, avg keeps a float64 sum
and a count. Three steps, each one Acero group-by over the whole batch:

* ``partial`` -- rows with argument columns ``x<i>`` -> accumulators per group;
* ``merge``   -- rows of accumulators (state and partials concatenated) -> one row per group;
* ``finish``  -- accumulators -> the aggregate values (avg = sum / count).

Result types: counts int64; sum as Arrow's sum (int64, uint64, float64, decimal); min/max
the argument type; avg float64.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.runtime.operators.window.window_specs import AggregateSpec

_SKIP_NULLS = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
_COUNT_VALID = pc.CountOptions(mode="only_valid")


@dataclass(frozen=True)
class _Part:
    """One accumulator column: how partials compute it and how they merge."""

    name: str
    argument: str | None  # x<i>, or None for count_all
    partial: str
    merge: str
    dtype: pa.DataType


class Accumulators:
    """The accumulator layout of a list of aggregates over one input schema."""

    def __init__(self, aggregates: Sequence[AggregateSpec], input_schema: pa.Schema) -> None:
        self.aggregates = tuple(aggregates)
        self._parts: list[list[_Part]] = []
        for index, agg in enumerate(self.aggregates):
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
            dtype = pa.float64() if agg.function == "avg" else parts[0].dtype
            fields.append(pa.field(agg.name, dtype))
        return fields

    def arguments(self, batch: pa.RecordBatch) -> dict[str, pa.Array]:
        """The argument column ``x<i>`` of every aggregate that has one."""
        arguments = {}
        for i, agg in enumerate(self.aggregates):
            if agg.column is not None:
                arguments[f"x{i}"] = batch.column(agg.column)
                if agg.function == "avg":
                    arguments[f"x{i}_float"] = pc.cast(batch.column(agg.column), pa.float64())
        return arguments

    def partial(self, rows: pa.Table, group_by: list[str]) -> pa.Table:
        specs: list[tuple[object, ...]] = []
        for parts in self._parts:
            for p in parts:
                if p.argument is None:
                    specs.append(([], "count_all"))
                else:
                    specs.append((p.argument, p.partial,
                                  _COUNT_VALID if p.partial == "count" else _SKIP_NULLS))
        return self._grouped(rows, group_by, specs)

    def merge(self, rows: pa.Table, group_by: list[str],
              extra: Sequence[tuple[str, str]] = ()) -> pa.Table:
        """One row per group; ``extra`` adds (column, function) aggregates kept by name."""
        specs: list[tuple[object, ...]] = [(p.name, p.merge, _SKIP_NULLS)
                                           for parts in self._parts for p in parts]
        specs.extend((column, function, _SKIP_NULLS) for column, function in extra)
        names = [p.name for parts in self._parts for p in parts] + [c for c, _ in extra]
        result = rows.group_by(group_by, use_threads=False).aggregate(specs)
        columns = _last(result.columns, len(specs))
        return pa.Table.from_arrays(
            [result.column(k) for k in group_by] + columns, names=group_by + names)

    def finish(self, rows: pa.Table) -> list[pa.ChunkedArray]:
        values = []
        for agg, parts in zip(self.aggregates, self._parts):
            if agg.function == "avg":
                total, count = rows.column(parts[0].name), rows.column(parts[1].name)
                values.append(pc.divide(total, pc.cast(pc.if_else(
                    pc.equal(count, 0), None, count), pa.float64())))
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
    if agg.function in ("count", "count_star"):
        return [_Part(name, None if agg.function == "count_star" else x, "count", "sum",
                      pa.int64())]
    if agg.function == "sum":
        return [_Part(name, x, "sum", "sum", _sum_type(arg_type))]
    if agg.function in ("min", "max"):
        return [_Part(name, x, agg.function, agg.function, arg_type)]
    return [_Part(f"{name}_sum", f"{x}_float", "sum", "sum", pa.float64()),
            _Part(f"{name}_count", x, "count", "sum", pa.int64())]


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
