"""Hash aggregate: GROUP BY with SQL aggregates, computed by Acero group-bys.

While consuming, each batch is reduced to the columns the aggregation needs: the group
keys and one argument column per aggregate, with the aggregate's FILTER already applied
(rows it rejects become NULL, which every aggregate skips). Grouping is Acero's
(multi-threaded; NULL keys form one group as SQL wants). With no group keys the result is
exactly one row, also for an empty input.

When every aggregate can be merged (``partial_aggregates``), each chunk of about
``_CHUNK_ROWS`` rows is grouped to partial aggregates as it arrives, so the operator holds
one row per group and chunk instead of its input (while chunks do reduce: once a chunk
keeps more than half of its rows, the rest of the input is held as it comes); at the end
the partials are merged. Otherwise the reduced columns are held and grouped once at the
end of the input.

Spilling: what is held is accounted against ``execution.memory-budget``. When it would
exceed the budget, held partials are first merged (which may free enough), and otherwise
the partials -- or, for aggregates that cannot be merged, the held argument columns -- are
written to spill runs partitioned by a hash of the group keys (``spilled_groups``). At the
end of the input every partition is aggregated on its own (a partition too large to hold
is partitioned again, one level deeper); one group too large to hold fails with
ResourceExhausted naming it -- unless its aggregates can be computed streaming over its
rows (``large_group``: mergeable ones, the variance family, DISTINCT count / sum / avg /
variance), as for the grand total of ROLLUP / CUBE and a global aggregate (which groups by
a constant key when it spills).

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

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError, ResourceExhausted
from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall
from flowsql.planner.physical import HashAggregateExec, SortAggregateExec
from flowsql.runtime.expressions import compile_expr, compile_exprs, compile_predicate
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    positional,
    table_to_batches,
)
from flowsql.runtime.kernels.grouping import groupable
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.aggregate import large_group
from flowsql.runtime.operators.aggregate import partial_aggregates as partials
from flowsql.runtime.operators.aggregate.spilled_groups import (
    MAX_LEVEL,
    SpilledGroups,
    coalesced,
    single_group,
)
from flowsql.runtime.spill import SpillRun
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
#: rows of input grouped to partial aggregates at a time (when every aggregate merges)
_CHUNK_ROWS = 1 << 19
#: bytes of a spilled partition re-partitioned at a time (at most half the free budget)
_SPLIT_BYTES = 64 << 20
#: the constant group key of a global aggregate
_CONSTANT_KEY = "k"


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
    """Blocking: holds partial aggregates or the key and argument columns (accounted
    against the memory budget, spilled beyond it) and emits the groups at end of input.
    The sort aggregate reuses its columns and aggregation over each run of complete
    groups."""

    def __init__(self, node: HashAggregateExec | SortAggregateExec) -> None:
        self.node = node
        self._plans = [_plan(a) for a in node.aggs]

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        schema = self.node.input.schema
        #: the aggregates (by index) with one argument column evaluated by ``_evaluate``
        self._with_argument = [i for i, agg in enumerate(self.node.aggs)
                               if agg.args and agg.function is None]
        #: group keys, then those arguments: compiled together, so an expression they
        #: repeat (Q1's ``l_extendedprice * (1 - l_discount)``) is computed once per batch
        self._evaluate = compile_exprs(
            [*self.node.group_exprs, *(self.node.aggs[i].args[0] for i in self._with_argument)],
            schema)
        self._filters: list[Callable[[pa.RecordBatch], pa.Array] | None] = []
        #: every argument of each user-defined aggregate (by aggregate index)
        self._user_args = {i: [compile_expr(a, schema) for a in agg.args]
                           for i, agg in enumerate(self.node.aggs) if agg.function is not None}
        for agg in self.node.aggs:
            self._filters.append(compile_predicate(agg.filter, schema)
                                 if agg.filter is not None else None)
        #: reduced input batches held (not yet grouped to partials)
        self._parts: list[pa.RecordBatch] = []
        self._memory = HeldMemory(context)
        self._mergeable = partials.mergeable(self.node.aggs)
        #: the group keys of what is held (a constant key for a global aggregate)
        self._group_keys = [f"g{i}" for i in range(len(self.node.group_exprs))] \
            or [_CONSTANT_KEY]
        #: partial aggregates of earlier chunks (when every aggregate merges)
        self._partials: list[pa.Table] = []
        self._pending_rows = 0
        #: chunks are grouped to partials while that reduces them
        self._chunks_reduce = True
        #: the spill runs, once what is held outgrew the budget
        self._spilled: SpilledGroups | None = None

    def _argument(self, index: int, batch: pa.RecordBatch, value: pa.Array | None
                  ) -> pa.Array:
        """The column aggregate ``index`` reads (its argument's ``value``, None for
        COUNT(*)); rows its FILTER rejects are NULL. COUNT(*) counts a TRUE column (NULL
        where filtered out)."""
        keep = self._filters[index]
        if value is None:
            value = pa.array(np.ones(batch.num_rows, dtype=bool))
        if self._plans[index].float_argument and not (
                self._mergeable and pa.types.is_decimal(value.type)):
            # merged AVG sums decimals exactly (``partial_aggregates.final``)
            value = value.cast(pa.float64())
        elif pa.types.is_null(value.type):
            value = value.cast(pa.int64())
        if keep is not None:
            value = pc.if_else(keep(batch), value, pa.scalar(None, value.type))
        return value

    def _reduced(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The columns the aggregation reads: group keys ``g<i>``, arguments ``a<i>``."""
        values = self._evaluate(batch)
        width = len(self.node.group_exprs)
        columns = [groupable(v) for v in values[:width]]
        names = [f"g{i}" for i in range(width)]
        arguments = dict(zip(self._with_argument, values[width:]))
        for i in range(len(self.node.aggs)):
            if i in self._user_args:
                columns += [fn(batch) for fn in self._user_args[i]]
                names += [f"a{i}_{j}" for j in range(len(self._user_args[i]))]
                keep = self._filters[i]
                if keep is not None:
                    columns.append(keep(batch))
                    names.append(f"m{i}")
                continue
            columns.append(self._argument(i, batch, arguments.get(i)))
            names.append(f"a{i}")
        return (pa.RecordBatch.from_arrays(columns, names=names) if columns
                else pa.record_batch([pa.nulls(batch.num_rows)], names=["_"]).select([]))

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        self._take(self._reduced(batch))
        return ()

    def _take(self, part: pa.RecordBatch) -> None:
        """Hold ``part``, making room (merging partials, spilling) when the budget is
        reached; group the pending rows to partials once they make a chunk."""
        nbytes = batch_nbytes(part)
        if not self._memory.try_hold(nbytes):
            self._make_room()
            if not self._memory.try_hold(nbytes):
                self._spill(self._held_form(pa.Table.from_batches([part])))
                return
        self._parts.append(part)
        self._pending_rows += part.num_rows
        if self._mergeable and self._chunks_reduce and self._pending_rows >= _CHUNK_ROWS:
            rows = self._pending_rows
            chunk = self._partial_of_pending()
            self._chunks_reduce = chunk.num_rows * 2 <= rows
            self._partials.append(chunk)
            self._account()

    def _keyed(self, table: pa.Table) -> pa.Table:
        """``table`` with the constant key a global aggregate groups by."""
        if self.node.group_exprs:
            return table
        return table.append_column(_CONSTANT_KEY,
                                   pa.array(np.zeros(table.num_rows, dtype=np.int8)))

    def _held_form(self, table: pa.Table) -> pa.Table:
        """Reduced input as it is held and spilled: partials when every aggregate
        merges, else the reduced columns themselves."""
        if not self._mergeable:
            return self._keyed(table)
        return partials.partial(self._keyed(table), self._group_keys, self.node.aggs)

    def _partial_of_pending(self) -> pa.Table:
        table = self._held_form(pa.Table.from_batches(self._parts))
        self._parts, self._pending_rows = [], 0
        return table

    def _merged(self) -> pa.Table | None:
        """Everything held as one table of merged partials (None if nothing is held)."""
        if self._parts:
            self._partials.append(self._partial_of_pending())
        if not self._partials:
            return None
        if len(self._partials) == 1:
            merged = self._partials[0]
        elif partials.disjoint(self._partials, self._group_keys):
            merged = pa.concat_tables(self._partials)
        else:
            merged = partials.merge(pa.concat_tables(self._partials), self._group_keys,
                                    self.node.aggs)
        self._partials = [merged]
        return merged

    def _account(self) -> None:
        """Hold exactly what is held now (after it was reorganized)."""
        self._memory.release_all()
        held = sum(batch_nbytes(p) for p in self._parts) + sum(
            t.nbytes for t in self._partials)
        if not self._memory.try_hold(held):
            self._spill_held()

    def _make_room(self) -> None:
        """Free memory: merge held partials if that halves them, else spill all that is
        held."""
        if self._mergeable:
            before = self._memory.held
            merged = self._merged()
            if merged is not None and merged.nbytes * 2 <= before:
                self._account()
                return
        self._spill_held()

    def _spill_held(self) -> None:
        if self._mergeable:
            merged = self._merged()
            if merged is not None:
                self._spill(merged)
        elif self._parts:
            self._spill(self._keyed(pa.Table.from_batches(self._parts)))
        self._parts, self._partials, self._pending_rows = [], [], 0
        self._memory.release_all()

    def _spill(self, table: pa.Table) -> None:
        """Append ``table`` (in held form) to the spill runs of its partitions."""
        if self._spilled is None:
            self._spilled = SpilledGroups(self.context, table.schema, self._group_keys)
        self._spilled.add(table)

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
        if self._spilled is not None:
            self._spill_held()
            spilled, self._spilled = self._spilled, None
            return self._partitions_output(spilled.finish(), spilled)
        if self._mergeable:
            merged = self._merged()
            self._partials = []
            self._memory.release_all()
            if merged is None and not self.node.group_exprs:
                table = self._over_nothing()
            else:
                table = self._final(merged)
            return table_to_batches(table, self.node.schema, batch_size(self.context.settings))
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
        if self._spilled is not None:
            self._spilled.delete()
            self._spilled = None
        self._parts, self._partials = [], []
        self._memory.release_all()

    def _final(self, merged: pa.Table | None) -> pa.Table:
        """The output rows of merged partials (None: no input rows, grouped)."""
        if merged is None:
            return self._aggregate(self._empty(), self._group_keys)
        keys = [merged.column(k) for k in self._group_keys if k != _CONSTANT_KEY]
        return positional([*keys, *partials.final(merged, self.node.aggs)], merged.num_rows)

    def _partitions_output(self, runs: list[SpillRun | None], spilled: SpilledGroups
                           ) -> Iterator[pa.RecordBatch]:
        """The groups of each spilled partition, aggregated partition by partition."""
        try:
            for run in runs:
                if run is not None:
                    yield from self._partition_output(run, spilled.level)
        finally:
            spilled.delete()

    def _partition_output(self, run: SpillRun, level: int) -> Iterator[pa.RecordBatch]:
        if not self._memory.try_hold(run.nbytes):
            yield from self._split(run, level)
            return
        yield from self._held_partition_output(run)

    def _held_partition_output(self, run: SpillRun) -> Iterator[pa.RecordBatch]:
        """The groups of a spilled partition whose bytes are held."""
        table = run.read_table()
        run.delete()
        if self._mergeable:
            merged = partials.merge(table, self._group_keys, self.node.aggs)
            del table
            result = self._final(merged)
        else:
            result = self._aggregate(table, self._group_keys)
            del table
        self._memory.release_all()
        yield from table_to_batches(result, self.node.schema, batch_size(self.context.settings))

    def _split(self, run: SpillRun, level: int) -> Iterator[pa.RecordBatch]:
        """A partition too large to hold, partitioned again one level deeper."""
        group = single_group(run, self._group_keys)
        if group is not None or level + 1 > MAX_LEVEL:
            if self._memory.try_hold(run.nbytes, beyond_share=True):
                yield from self._held_partition_output(run)
                return
            if group is not None and not self._mergeable and large_group.computable(
                    self.node.aggs):
                yield from self._large_group_output(run)
                return
            run.delete()
            names = [f.name for f in self.node.group_fields]
            what = ("the group (" + ", ".join(f"{n} = {v!r}" for n, v in
                                              zip(names, group.values())) + ")"
                    if group is not None else "a partition of groups")
            available = self.context.memory.available
            room = "" if available is None else f", {available / 2**20:.1f} MiB free"
            raise ResourceExhausted(
                f"{self.context.name}: {what} holds {run.nbytes / 2**20:.1f} MiB, more than "
                f"execution.memory-budget allows{room}, and cannot be split further; raise "
                "the budget with SET 'execution.memory-budget' = '...'")
        deeper = SpilledGroups(self.context, run.schema, self._group_keys, level + 1)
        try:
            available = self.context.memory.available
            for batch in coalesced(run, _SPLIT_BYTES if available is None
                                   else max(1, min(available // 2, _SPLIT_BYTES))):
                deeper.add(batch)
            run.delete()
            yield from self._partitions_output(deeper.finish(), deeper)
        finally:
            deeper.delete()

    def _large_group_output(self, run: SpillRun) -> Iterator[pa.RecordBatch]:
        """The one group of ``run``, too large to hold, aggregated streaming."""
        try:
            values = large_group.aggregate(self.context, self._memory, run, self.node.aggs)
            first = next(b for b in run.read() if b.num_rows)
            columns = [first.column(k).slice(0, 1) for k in self._group_keys
                       if k != _CONSTANT_KEY]
        finally:
            run.delete()
        table = positional([*columns, *values], 1)
        yield from table_to_batches(table, self.node.schema, batch_size(self.context.settings))

    def _aggregate(self, table: pa.Table, keys: list[str], use_threads: bool = True
                   ) -> pa.Table:
        """Group ``table`` (columns ``a<i>`` plus ``keys``) by ``keys``: the key columns
        (except a constant ``k``) then one column per aggregate. Single-threaded, the groups
        come in the order of their first rows."""
        specs: list[tuple[Any, ...]] = []
        for i, plan in enumerate(self._plans):
            if plan is _USER:
                continue
            name = f"a{i}"
            if plan.float_argument and pa.types.is_decimal(table.schema.field(name).type):
                # held for merged partials, where AVG sums decimals exactly
                table = table.set_column(table.schema.get_field_index(name), name,
                                         table.column(name).cast(pa.float64()))
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
