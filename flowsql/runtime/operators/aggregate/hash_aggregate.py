"""Hash aggregate: GROUP BY with SQL aggregates, computed by one Acero group-by.

While consuming, each batch is reduced to the columns the aggregation needs: the group
keys and one argument column per aggregate, with the aggregate's FILTER already applied
(rows it rejects become NULL, which every aggregate skips). At end of input the collected
columns are grouped once (Acero is multi-threaded, and NULL keys form one group as SQL
wants). With no group keys the result is exactly one row, also for an empty input.

DISTINCT: count uses Acero's count_distinct; min, max, bool_and, bool_or and any_value
ignore duplicates anyway; sum, avg and the variance family collect each group's distinct
values (Acero's ``distinct``) and aggregate those in a second, small group-by.

User-defined aggregates (``AggCall.function``) keep all their argument columns (and their
FILTER as a mask); at end of input one more Acero ``list`` aggregate of the row numbers
gives each group's rows, and the function is called once per group with the group's
arrays (``runtime.user_functions.aggregate``). Only a class-form aggregate with ``merge``
is split into partial and final aggregates (its partial step returns accumulators as JSON
text, its final step merges them); the call per group is the same for every step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall
from flowsql.planner.physical import HashAggregateExec, SortAggregateExec
from flowsql.runtime.expressions import compile_expr, compile_predicate
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    positional,
    table_to_batches,
)
from flowsql.runtime.kernels.grouping import groupable
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.user_functions.aggregate import call_per_group, group_rows

_VARIANCE = {"stddev_samp": ("stddev", 1), "stddev_pop": ("stddev", 0),
             "var_samp": ("variance", 1), "var_pop": ("variance", 0)}
_SIMPLE = {"sum": "sum", "min": "min", "max": "max", "any_value": "min", "bool_and": "all",
           "bool_or": "any", "avg": "mean"}
_SKIP_NULLS = pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)


@dataclass(frozen=True)
class _Plan:
    """How one AggCall is computed: Acero function, options, and whether its argument is
    first reduced to distinct values per group."""

    function: str
    options: Any
    distinct_values: bool
    float_argument: bool


#: the plan of a user-defined aggregate (computed apart from the Acero group-by)
_USER = _Plan("user", None, False, False)
_ROW = "__row"


def _plan(agg: AggCall) -> _Plan:
    name = agg.name
    if agg.function is not None:
        return _USER
    if name in ("count", "count_star"):
        function = "count_distinct" if agg.distinct else "count"
        return _Plan(function, pc.CountOptions("only_valid"), False, False)
    if name in _VARIANCE:
        function, ddof = _VARIANCE[name]
        return _Plan(function, pc.VarianceOptions(ddof=ddof), agg.distinct, True)
    if name in _SIMPLE:
        # distinct changes nothing for min / max / bool_and / bool_or / any_value
        needs_distinct = agg.distinct and name in ("sum", "avg")
        return _Plan(_SIMPLE[name], _SKIP_NULLS, needs_distinct, name == "avg")
    raise ExecutionError(f"aggregate function {name} is not supported")


class HashAggregateOperator(Operator):
    """Blocking: holds the key and argument columns (accounted against the memory
    budget) and emits the groups at end of input. The sort aggregate reuses its columns
    and aggregation over each run of complete groups."""

    def __init__(self, node: HashAggregateExec | SortAggregateExec) -> None:
        self.node = node
        self._plans = [_plan(a) for a in node.aggs]

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        self._groups = [compile_expr(e, schema) for e in self.node.group_exprs]
        self._args: list[Callable[[pa.RecordBatch], pa.Array] | None] = []
        self._filters: list[Callable[[pa.RecordBatch], pa.Array] | None] = []
        #: every argument of each user-defined aggregate (by aggregate index)
        self._user_args = {i: [compile_expr(a, schema) for a in agg.args]
                           for i, agg in enumerate(self.node.aggs) if agg.function is not None}
        for agg in self.node.aggs:
            self._args.append(compile_expr(agg.args[0], schema)
                              if agg.args and agg.function is None else None)
            self._filters.append(compile_predicate(agg.filter, schema)
                                 if agg.filter is not None else None)
        self._parts: list[pa.RecordBatch] = []
        self._memory = HeldMemory(context)

    def _argument(self, index: int, batch: pa.RecordBatch) -> pa.Array:
        """The column aggregate ``index`` reads; rows its FILTER rejects are NULL. COUNT(*)
        counts a TRUE column (NULL where filtered out)."""
        fn, keep = self._args[index], self._filters[index]
        value = fn(batch) if fn is not None else pa.array(np.ones(batch.num_rows, dtype=bool))
        if self._plans[index].float_argument:
            value = value.cast(pa.float64())
        elif pa.types.is_null(value.type):
            value = value.cast(pa.int64())
        if keep is not None:
            value = pc.if_else(keep(batch), value, pa.scalar(None, value.type))
        return value

    def _reduced(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The columns the aggregation reads: group keys ``g<i>``, arguments ``a<i>``."""
        columns = [groupable(fn(batch)) for fn in self._groups]
        names = [f"g{i}" for i in range(len(self._groups))]
        for i in range(len(self.node.aggs)):
            if i in self._user_args:
                columns += [fn(batch) for fn in self._user_args[i]]
                names += [f"a{i}_{j}" for j in range(len(self._user_args[i]))]
                keep = self._filters[i]
                if keep is not None:
                    columns.append(keep(batch))
                    names.append(f"m{i}")
                continue
            columns.append(self._argument(i, batch))
            names.append(f"a{i}")
        return (pa.RecordBatch.from_arrays(columns, names=names) if columns
                else pa.record_batch([pa.nulls(batch.num_rows)], names=["_"]).select([]))

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        part = self._reduced(batch)
        self._parts.append(part)
        self._memory.hold(batch_nbytes(part))
        return ()

    def _empty(self) -> pa.Table:
        types = [T.normalize_storage_type(e.dtype) for e in self.node.group_exprs]
        columns = [groupable(pa.array([], type=t)) for t in types]
        names = [f"g{i}" for i in range(len(types))]
        for i, agg in enumerate(self.node.aggs):
            if agg.function is not None:
                columns += [pa.array([], T.normalize_storage_type(a.dtype)) for a in agg.args]
                names += [f"a{i}_{j}" for j in range(len(agg.args))]
                if agg.filter is not None:
                    columns.append(pa.array([], pa.bool_()))
                    names.append(f"m{i}")
                continue
            dtype = agg.args[0].dtype if agg.args else T.BOOL
            if self._plans[i].float_argument:
                dtype = T.FLOAT64
            elif pa.types.is_null(dtype):
                dtype = T.INT64
            columns.append(pa.array([], type=dtype))
            names.append(f"a{i}")
        return pa.table(columns, names=names) if columns else \
            pa.table([pa.nulls(0)], names=["_"]).select([])

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        table = pa.Table.from_batches(self._parts) if self._parts else self._empty()
        if self.node.group_exprs:
            table = self._aggregate(table, [f"g{i}" for i in range(len(self.node.group_exprs))])
        elif table.num_rows:
            # Acero has no scalar form of every aggregate (``distinct``), so a global
            # aggregate groups by a constant key instead.
            constant = pa.array(np.zeros(table.num_rows, dtype=np.int8))
            table = self._aggregate(table.append_column("k", constant), ["k"])
        else:
            table = self._over_nothing()
        self._parts = []
        self._memory.release_all()
        return table_to_batches(table, self.node.schema, batch_size(self.context.settings))

    def _over_nothing(self) -> pa.Table:
        """The one row of a global aggregate over no rows: counts 0, all else NULL."""
        columns = [pa.array([0 if a.name in ("count", "count_star") else None], type=f.dtype)
                   for a, f in zip(self.node.aggs, self.node.agg_fields)]
        for i, agg in enumerate(self.node.aggs):
            if agg.function is not None:  # the function says what it gives for no rows
                empty = [pa.array([], T.normalize_storage_type(a.dtype)) for a in agg.args]
                columns[i] = call_per_group(agg.function, empty, np.zeros(2, np.int64),
                                            lambda _: "no rows")
        return positional(columns, 1)

    def close(self) -> None:
        self._memory.release_all()

    def _aggregate(self, table: pa.Table, keys: list[str], use_threads: bool = True
                   ) -> pa.Table:
        """Group ``table`` (columns ``a<i>`` plus ``keys``) by ``keys``: the key columns
        (except a constant ``k``) then one column per aggregate. Single-threaded, the groups
        come in the order of their first rows."""
        specs: list[tuple[Any, ...]] = []
        for i, plan in enumerate(self._plans):
            if plan is _USER:
                continue
            function = "distinct" if plan.distinct_values else plan.function
            options = pc.CountOptions("only_valid") if plan.distinct_values else plan.options
            specs.append((f"a{i}", function, options))
        if self._user_args:
            table = table.append_column(_ROW, pa.array(np.arange(table.num_rows)))
            specs.append((_ROW, "list"))
        grouped = table.group_by(keys, use_threads=use_threads).aggregate(specs)
        columns = [grouped.column(k) for k in keys if k != "k"]
        built = iter(specs)
        for i, plan in enumerate(self._plans):
            if plan is _USER:
                columns.append(self._user_aggregate(i, table, grouped, keys))
                continue
            spec = next(built)
            result = grouped.column(f"{spec[0]}_{spec[1]}")
            if plan.distinct_values:
                result = _over_distinct(result, plan)
            if self.node.aggs[i].name in ("count", "count_star"):
                result = pc.fill_null(result, 0)
            columns.append(result)
        return positional(columns, grouped.num_rows)


    def _user_aggregate(self, index: int, table: pa.Table, grouped: pa.Table,
                        keys: list[str]) -> pa.Array:
        """User aggregate ``index`` over each group's rows (those its FILTER keeps)."""
        agg = self.node.aggs[index]
        assert agg.function is not None
        rows, offsets = group_rows(grouped.column(f"{_ROW}_list"))
        if agg.filter is not None:
            keep = pc.fill_null(table.column(f"m{index}").take(rows), False)
            kept = np.concatenate([[0], np.cumsum(keep.to_numpy(zero_copy_only=False))])
            rows, offsets = rows.filter(keep), kept[offsets]
        args = [table.column(f"a{index}_{j}").take(rows).combine_chunks()
                for j in range(len(agg.args))]
        names = [f.name for f in self.node.group_fields]
        key_columns = [grouped.column(k) for k in keys if k != "k"]

        def describe(group: int) -> str:
            if not key_columns:
                return "the whole input"
            values = ", ".join(f"{n} = {c[group].as_py()!r}" for n, c in zip(names, key_columns))
            return f"the group ({values})"

        return call_per_group(agg.function, args, offsets, describe)


def _over_distinct(lists: pa.ChunkedArray, plan: _Plan) -> pa.Array:
    """Aggregate each group's list of distinct values; a group without values is NULL."""
    lists = lists.combine_chunks()
    values = pc.list_flatten(lists)
    parents = pc.list_parent_indices(lists)
    per_group = pa.table({"g": parents, "v": values}).group_by("g").aggregate(
        [("v", plan.function, plan.options)])
    slot = np.full(len(lists), -1, dtype=np.int64)
    slot[per_group.column("g").to_numpy()] = np.arange(per_group.num_rows)
    return per_group.column(f"v_{plan.function}").take(pa.array(slot, mask=slot < 0))
