"""Window: append one column per window function call to every input row (blocking).

A user-defined aggregate over a window runs once per distinct frame
(``runtime.user_functions.frames``). At end of input, the calls are grouped by their window (partition keys and order keys);
per window the rows are sorted once by (partition, order), the partition and peer
layout is computed once, every call of that window is evaluated over the sorted rows
(:mod:`window_functions`), and the results are put back in input order. Output rows keep
the input order.

Spilling: the rows are held against ``execution.memory-budget``. When it is full and the
windows share PARTITION BY keys (the keys every call partitions by), the rows, each with
its input position, are split into spill runs by the hash of those keys
(:mod:`flowsql.runtime.spill.partition_spill`): a window partition never spans two runs,
so each run is evaluated in memory on its own exactly as above. The runs' outputs are
merged back into input order by their positions (an external sort), so the result is the
in-memory path's, row for row.

Calls without a PARTITION BY key common to all of them (``PARTITION BY a`` next to
``PARTITION BY b``) are spilled in groups of calls that do share keys
(:mod:`window_groups`): the positioned rows are written once in input order and once per
group, split by that group's keys. Group after group, each spilled partition is evaluated
for the group's calls only, the (results, position) pieces are put back into input order
by the external sort and written as one run; at the end the rows' run and every group's
run are zipped column-wise, again the in-memory result row for row.

A call without PARTITION BY makes the whole input one partition. ROW_NUMBER, RANK and
DENSE_RANK over it, running aggregates (SUM, COUNT, AVG, MIN, MAX over a frame from
UNBOUNDED PRECEDING to CURRENT ROW) and LAG / LEAD with constant offsets form a group of
their own that needs no partition in memory (:mod:`streamed_ranking`,
:mod:`streamed_running`, :mod:`streamed_shifts`): the positions, with the calls'
arguments, are sorted by the window order externally, evaluated chunk by chunk with what
earlier chunks carry over (and, for LEAD, the rows that follow), and sorted back by
position. Any other call without PARTITION BY (value functions, NTILE, sliding frames, an
aggregate's whole-input frame without ORDER BY, LAG / LEAD by a column) needs the whole
input at once: when it does not fit, the operator fails with ResourceExhausted naming
``execution.memory-budget``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Expr, Literal, SortKey, WindowCall, column_ids
from flowsql.planner.physical import WindowExec
from flowsql.planner.schema import Schema
from flowsql.runtime.expressions import compile_expr
from flowsql.runtime.kernels.batches import (
    batch_nbytes,
    batch_size,
    conform,
    table_to_batches,
    to_table,
)
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.kernels.ordering import sort_indices
from flowsql.runtime.operator import Operator, OperatorContext
from flowsql.runtime.operators.over import window_functions as W
from flowsql.runtime.operators.over.streamed_ranking import RunningRanks, streamable
from flowsql.runtime.operators.over.streamed_running import (
    RunningAggregate,
    counts_rows,
    frame_of,
    is_running,
    peer_chunks,
)
from flowsql.runtime.operators.over.streamed_shifts import (
    RunningShift,
    is_shift,
    lookahead_rows,
    with_lookahead,
)
from flowsql.runtime.operators.over.window_frames import Layout, default_frame, frame_bounds
from flowsql.runtime.operators.over.window_groups import partition_groups_of_calls, zip_runs
from flowsql.runtime.spill.external_sort import ExternalSorter
from flowsql.runtime.spill.partition_spill import KeysOf, PartitionSpill, partition_groups
from flowsql.runtime.spill.spill_run import SpillRun, SpillWriter
from flowsql.runtime.user_functions.frames import call_per_frame

_RANKING = {"row_number": W.row_number, "rank": W.rank, "dense_rank": W.dense_rank,
            "percent_rank": W.percent_rank, "cume_dist": W.cume_dist}
_AGGREGATES = ("sum", "count", "count_star", "avg", "min", "max")
_VALUES = ("first_value", "last_value", "nth_value")


#: the external sort that restores input order compares only its key column, the rows'
#: positions; the expression itself is never evaluated
_BY_POSITION = (SortKey(Literal(0, T.INT64)),)


def common_partition_keys(calls: tuple[WindowCall, ...]) -> tuple[Expr, ...]:
    """The PARTITION BY expressions every call has: rows equal on them are in one window
    partition of every call."""
    common = [e for e in calls[0].partition_by if all(e in c.partition_by for c in calls)]
    return tuple(dict.fromkeys(common))


class WindowOperator(Operator):
    """Holds the whole input (accounted against the memory budget), or spills it when the
    budget is full: by the hash of the common PARTITION BY keys, or, without common keys,
    once per group of calls that share keys (see module doc)."""

    def __init__(self, node: WindowExec) -> None:
        self.node = node
        for call in node.calls:
            if call.function is not None:  # a user-defined aggregate (user_functions.frames)
                continue
            if call.name not in (*_RANKING, *_AGGREGATES, *_VALUES, "ntile", "lag", "lead"):
                raise ExecutionError(f"window function {call.name} is not supported")
            if call.distinct:
                raise ExecutionError(f"{call.name}(DISTINCT ...) OVER is not supported")

    def open(self, context: OperatorContext) -> None:
        super().open(context)
        self._batches: list[pa.RecordBatch] = []
        self._memory = HeldMemory(context)
        schema = self.node.input.schema
        # rows without columns (all pruned) carry no key to split them by
        keys = common_partition_keys(self.node.calls) if self.node.calls and schema else ()
        self._key_fns = [(compile_expr(e, schema), e.dtype) for e in keys]
        self._spill: PartitionSpill | None = None
        self._position = 0
        # calls without common keys: spilled group by group, if every group either has
        # keys or is ranking over the whole input
        self._groups: list[_CallGroup] = []
        if not keys and schema and self.node.calls:
            groups = [self._call_group(group_keys, members) for group_keys, members
                      in partition_groups_of_calls(self.node.calls)]
            if all(not g.streamed or streamable([self.node.calls[i] for i in g.members])
                   for g in groups):
                self._groups = groups
        self._rows_writer: SpillWriter | None = None
        self._group_spills: list[PartitionSpill | SpillWriter] = []
        #: runs of the grouped output (rows, then per group its results), deleted by
        #: ``close`` too, should the output be abandoned part way
        self._grouped_runs: list[SpillRun] = []

    def process_batch(self, input: int, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        if self._spill is not None:
            self._spill.write(self._positioned(batch))
            return ()
        if self._rows_writer is not None:
            self._write_grouped(self._positioned(batch))
            return ()
        self._batches.append(batch)
        if self._key_fns:
            if not self._memory.try_hold(batch_nbytes(batch)):
                self._start_spilling()
        elif self._groups:
            if not self._memory.try_hold(batch_nbytes(batch)):
                self._start_grouped_spilling()
        else:
            self._memory.hold(batch_nbytes(batch))
        return ()

    def close(self) -> None:
        self._memory.release_all()
        spills, self._group_spills = self._group_spills, []
        for spill in spills:  # left behind by an error
            finished = spill.finish()
            for run in finished if isinstance(finished, list) else [finished]:
                if run is not None:
                    run.delete()
        if self._rows_writer is not None:
            self._rows_writer.finish().delete()
            self._rows_writer = None
        for run in self._grouped_runs:
            run.delete()
        self._grouped_runs = []

    # -- spilling -------------------------------------------------------------------------

    def _keys_of(self, batch: pa.RecordBatch) -> list[pa.Array]:
        return [conform(fn(batch), dtype) for fn, dtype in self._key_fns]

    def _call_group(self, keys: tuple[Expr, ...], members: list[int]) -> _CallGroup:
        """The calls ``members`` spilled by ``keys`` with only the input columns they read."""
        cids: set[int] = set()
        for i in members:
            call = self.node.calls[i]
            for e in (*call.partition_by, *(k.expr for k in call.order_by), *call.args):
                cids |= column_ids(e)
        schema = self.node.input.schema
        columns = [i for i, f in enumerate(schema) if f.cid in cids]
        narrow = tuple(schema[i] for i in columns)
        fns = [(compile_expr(e, narrow), e.dtype) for e in keys]

        def keys_of(batch: pa.RecordBatch) -> list[pa.Array]:
            return [conform(fn(batch), dtype) for fn, dtype in fns]
        return _CallGroup(columns, narrow, keys_of, members, streamed=not keys)

    def _positioned(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` with its rows' input positions as an extra last column."""
        positions = pa.array(np.arange(self._position, self._position + batch.num_rows))
        self._position += batch.num_rows
        columns = [*batch.columns, positions]
        return pa.RecordBatch.from_arrays(columns, names=[f"c{i}" for i in range(len(columns))])

    def _start_spilling(self) -> None:
        first = self._positioned(self._batches[0])
        self._spill = PartitionSpill(self.context, first.schema, "window", self._keys_of)
        self._spill.write(first)
        for batch in self._batches[1:]:
            self._spill.write(self._positioned(batch))
        self._batches = []
        self._memory.release_all()

    def _spilled_output(self, spill: PartitionSpill) -> Iterator[pa.RecordBatch]:
        """Each spilled partition evaluated in memory, merged back into input order."""
        width = len(self.node.input.schema)
        size = batch_size(self.context.settings)
        sorter = ExternalSorter(self.context, _BY_POSITION, "window", size)
        try:
            for (table,) in partition_groups(self.context, [spill.finish()], [self._keys_of],
                                             "window"):
                assert table is not None
                rows = [pa.RecordBatch.from_arrays(b.columns[:width],
                                                   names=[f"c{i}" for i in range(width)])
                        for b in table.to_batches()]
                out = self._windowed(rows)
                sorter.add_sorted(out.append_column("position", table.column(width)))
            keep = list(range(len(self.node.schema)))
            for table in sorter.sorted_tables():
                yield from table_to_batches(table.select(keep), self.node.schema, size)
        finally:
            sorter.close()

    # -- spilling in groups of calls ------------------------------------------------------

    def _start_grouped_spilling(self) -> None:
        first = self._positioned(self._batches[0])
        self._rows_writer = SpillWriter(self.context.spill, first.schema, "window",
                                        self.context.metrics)
        self._group_spills = [
            SpillWriter(self.context.spill, group.narrow(first).schema, "window",
                        self.context.metrics) if group.streamed
            else PartitionSpill(self.context, group.narrow(first).schema, "window",
                                group.keys_of)
            for group in self._groups]
        self._write_grouped(first)
        for batch in self._batches[1:]:
            self._write_grouped(self._positioned(batch))
        self._batches = []
        self._memory.release_all()

    def _write_grouped(self, batch: pa.RecordBatch) -> None:
        assert self._rows_writer is not None
        self._rows_writer.write(batch)
        for spill, group in zip(self._group_spills, self._groups):
            spill.write(group.narrow(batch))

    def _grouped_output(self) -> Iterator[pa.RecordBatch]:
        """Every group's results in input order (one run each), zipped with the rows."""
        assert self._rows_writer is not None
        rows, self._rows_writer = self._rows_writer.finish(), None
        self._grouped_runs.append(rows)
        results: list[SpillRun] = []
        width = len(self.node.input.schema)
        size = batch_size(self.context.settings)
        try:
            while self._group_spills:
                spill = self._group_spills.pop(0)
                group = self._groups[len(results)]
                finished = spill.finish()
                results.append(self._streamed_results(finished, group)
                               if isinstance(finished, SpillRun)
                               else self._group_results(finished, group))
                self._grouped_runs.append(results[-1])
            # zipped columns: the rows and their position, then per group its results
            # and their position; the column of every call in the zipped batch:
            column_of: dict[int, int] = {}
            start = width + 1
            for group in self._groups:
                column_of.update((i, start + j) for j, i in enumerate(group.members))
                start += len(group.members) + 1
            names = [f"c{i}" for i in range(len(self.node.schema))]
            for columns in zip_runs(rows, results):
                out = [*columns[:width],
                       *(columns[column_of[i]] for i in range(len(self.node.calls)))]
                yield from table_to_batches(pa.table(out, names=names), self.node.schema, size)
        finally:
            rows.delete()
            for run in results:
                run.delete()

    def _group_results(self, runs: list[SpillRun | None], group: _CallGroup) -> SpillRun:
        """The results of the group's calls (and the positions), in input order."""
        width = len(self.node.input.schema)
        size = batch_size(self.context.settings)
        sorter = ExternalSorter(self.context, _BY_POSITION, "window", size)
        try:
            for (table,) in partition_groups(self.context, [runs], [group.keys_of], "window"):
                assert table is not None
                rows = [group.widen(b, width) for b in table.to_batches()]
                values = self._results(rows, group.members)
                columns = [*values, table.column(len(group.columns))]
                sorter.add_sorted(pa.table(columns,
                                           names=[f"c{i}" for i in range(len(columns))]))
            return self._sorted_run(sorter)
        finally:
            sorter.close()

    def _streamed_results(self, run: SpillRun, group: _CallGroup) -> SpillRun:
        """A group of ranking calls and running aggregates over the whole input
        (:mod:`streamed_ranking`, :mod:`streamed_running`): the positions, with the
        aggregates' arguments, are sorted by the window order externally, evaluated chunk
        by chunk, and the (values, position) rows sorted back into input order."""
        size = batch_size(self.context.settings)
        calls = [self.node.calls[i] for i in group.members]
        order_by = calls[0].order_by
        order_fns = [(compile_expr(k.expr, group.schema), k.expr.dtype) for k in order_by]
        # the argument columns each call reads: a running aggregate its argument, LAG /
        # LEAD their value and default
        arg_exprs: list[Expr] = []
        arg_columns: dict[int, list[int]] = {}
        for call in calls:
            wanted = ([] if counts_rows(call) else [call.args[0]]) if is_running(call) \
                else [call.args[0], *call.args[2:3]] if is_shift(call) else []
            arg_columns[id(call)] = list(range(1 + len(arg_exprs),
                                               1 + len(arg_exprs) + len(wanted)))
            arg_exprs += wanted
        arg_fns = [(compile_expr(e, group.schema), e.dtype) for e in arg_exprs]
        position = len(group.columns)

        def walked(batch: pa.RecordBatch) -> pa.RecordBatch:
            """(position, arguments, order keys): the sort keys come last."""
            arrays = [batch.column(position),
                      *(conform(fn(batch), dtype) for fn, dtype in arg_fns),
                      *(conform(fn(batch), dtype) for fn, dtype in order_fns)]
            return pa.RecordBatch.from_arrays(
                arrays, names=[f"c{i}" for i in range(len(arrays))])

        by_order = ExternalSorter(self.context, order_by, "window", size)
        numbered: SpillWriter | None = None
        try:
            for batch in run.read() if order_by else ():
                by_order.add(walked(batch))
            # numbered rows go to a run first: the merge above keeps the memory it needs
            # while they are written, and the sort by position gets it after
            ranks = RunningRanks()
            running = {id(c): RunningAggregate(c, order_by) for c in calls if is_running(c)}
            shifts = {id(c): RunningShift(c) for c in calls if is_shift(c)}
            # without ORDER BY all rows are peers, numbered in input order
            ordered = (by_order.sorted_tables() if order_by
                       else (pa.Table.from_batches([walked(b)]) for b in run.read()))
            # a RANGE frame ends at the row's last peer: chunks of whole peer groups
            peers = bool(order_by) and any(frame_of(c).mode == "range" for c in calls
                                           if is_running(c))
            chunks = peer_chunks(ordered, len(order_by)) if peers else ordered
            for table, ahead in with_lookahead(chunks, lookahead_rows(calls)):
                table = table.combine_chunks()
                n = table.num_rows
                order = [table.column(1 + len(arg_fns) + j).chunk(0)
                         for j in range(len(order_by))]
                numbers = ranks.next(order, n)
                columns = []
                for i, call in zip(group.members, calls):
                    args = [table.column(c).chunk(0) for c in arg_columns[id(call)]]
                    if is_running(call):
                        value = running[id(call)].next(args[0] if args else None, order, n)
                    elif is_shift(call):
                        following = (ahead.column(arg_columns[id(call)][0]).chunk(0)
                                     if ahead is not None and ahead.num_rows
                                     else args[0].slice(0, 0))
                        value = shifts[id(call)].next(args[0], args[1] if len(args) > 1
                                                      else None, following)
                    else:
                        value = pa.array(numbers[call.name])
                    columns.append(conform(value, self.node.fields[i].dtype))
                columns.append(table.column(0).chunk(0))
                batch = pa.RecordBatch.from_arrays(
                    columns, names=[f"c{i}" for i in range(len(columns))])
                if numbered is None:
                    numbered = SpillWriter(self.context.spill, batch.schema, "window",
                                           self.context.metrics)
                numbered.write(batch)
            by_order.close()
            run.delete()
            assert numbered is not None
            numbers_run = numbered.finish()
            numbered = None
            by_position = ExternalSorter(self.context, _BY_POSITION, "window", size)
            try:
                for batch in numbers_run.read():
                    by_position.add(batch)
                numbers_run.delete()
                return self._sorted_run(by_position)
            finally:
                numbers_run.delete()
                by_position.close()
        finally:
            if numbered is not None:
                numbered.finish().delete()
            run.delete()
            by_order.close()

    def _sorted_run(self, sorter: ExternalSorter) -> SpillRun:
        """What ``sorter`` holds, in its order, written to one run."""
        size = batch_size(self.context.settings)
        writer: SpillWriter | None = None
        try:
            for ordered in sorter.sorted_tables():
                if writer is None:
                    writer = SpillWriter(self.context.spill, ordered.schema, "window",
                                         self.context.metrics)
                for batch in ordered.to_batches(size):
                    writer.write(batch)
        except BaseException:
            if writer is not None:
                writer.finish().delete()
            raise
        assert writer is not None
        return writer.finish()

    # -- evaluation -----------------------------------------------------------------------

    def _evaluate(self, expr: Expr, rows: list[pa.RecordBatch]) -> pa.Array:
        """An expression over ``rows`` (the held input or one spilled partition), as one
        array."""
        fn: Callable[[pa.RecordBatch], pa.Array] = compile_expr(expr, self.node.input.schema)
        parts = [fn(b) for b in rows]
        return conform(pa.chunked_array(parts, type=expr.dtype), expr.dtype)

    def end_input(self, input: int) -> Iterable[pa.RecordBatch]:
        if self._spill is not None:
            return self._spilled_output(self._spill)
        if self._rows_writer is not None:
            return self._grouped_output()
        if not self._batches:
            return ()
        out = self._windowed(self._batches)
        self._batches = []
        self._memory.release_all()
        return table_to_batches(out, self.node.schema, batch_size(self.context.settings))

    def _windowed(self, rows: list[pa.RecordBatch]) -> pa.Table:
        """``rows`` with one column per window call appended, in the order of ``rows``."""
        results = self._results(rows, list(range(len(self.node.calls))))
        table = to_table(rows, len(self.node.input.schema))
        columns = [*table.columns, *results]
        return pa.table(columns, names=[f"c{i}" for i in range(len(columns))])

    def _results(self, rows: list[pa.RecordBatch], members: list[int]) -> list[pa.Array]:
        """The results of the calls ``members`` (indexes into the node's calls) over
        ``rows``, in that order, each in the order of ``rows``."""
        n = sum(b.num_rows for b in rows)
        windows: dict[tuple[tuple[Expr, ...], tuple[SortKey, ...]], list[int]] = {}
        for i in members:
            call = self.node.calls[i]
            windows.setdefault((call.partition_by, call.order_by), []).append(i)
        results: dict[int, pa.Array] = {}
        for (partition_by, order_by), window_members in windows.items():
            partition = [self._evaluate(e, rows) for e in partition_by]
            order = [self._evaluate(k.expr, rows) for k in order_by]
            specs = [SortKey(e) for e in partition_by] + list(order_by)
            perm = sort_indices([*partition, *order], specs, n)
            layout = Layout.of([p.take(perm) for p in partition],
                               [o.take(perm) for o in order], n)
            sorted_order = [o.take(perm) for o in order]
            inverse = np.empty(n, dtype=np.int64)
            inverse[np.asarray(perm.to_numpy(zero_copy_only=False))] = np.arange(n)
            back = pa.array(inverse)
            for i in window_members:
                call = self.node.calls[i]
                value = self._call(call, layout, perm, sorted_order, rows)
                results[i] = conform(value, self.node.fields[i].dtype).take(back)
        return [results[i] for i in members]

    def _argument(self, call: WindowCall, index: int, perm: pa.Array,
                  rows: list[pa.RecordBatch]) -> pa.Array:
        return self._evaluate(call.args[index], rows).take(perm)

    def _call(self, call: WindowCall, layout: Layout, perm: pa.Array,
              order: list[pa.Array], rows: list[pa.RecordBatch]) -> pa.Array:
        name = call.name
        if name in _RANKING:
            return pa.array(_RANKING[name](layout))
        if name == "ntile":
            buckets = self._argument(call, 0, perm, rows).to_numpy(zero_copy_only=False)
            return pa.array(W.ntile(layout, np.asarray(buckets, dtype=np.int64)))
        if name in ("lag", "lead"):
            values = self._argument(call, 0, perm, rows)
            offsets = (np.asarray(self._argument(call, 1, perm, rows).to_numpy(zero_copy_only=False),
                                  dtype=np.int64) if len(call.args) > 1
                       else np.ones(layout.n, dtype=np.int64))
            default = (self._argument(call, 2, perm, rows) if len(call.args) > 2
                       else pa.nulls(layout.n, values.type))
            return W.shifted(layout, values, -offsets if name == "lag" else offsets, default)
        frame = call.frame or default_frame(bool(call.order_by))
        start, end = frame_bounds(frame, layout, call.order_by, order)
        if call.function is not None:
            partition = [self._evaluate(e, rows).take(perm) for e in call.partition_by]
            return call_per_frame(call.function, [self._argument(call, j, perm, rows)
                                                  for j in range(len(call.args))],
                                  start, end, _describe_partition(call, partition))
        if name == "count_star" or (name == "count" and not call.args):
            return pa.array(W.frame_count(None, start, end))
        values = self._argument(call, 0, perm, rows)
        if name == "count":
            return pa.array(W.frame_count(values, start, end))
        if name == "sum":
            return W.frame_sum(values, start, end)
        if name == "avg":
            return W.frame_avg(values, start, end)
        if name in ("min", "max"):
            return W.frame_extreme(values, start, end, frame, layout, name == "max")
        if name == "last_value":
            return W.nth_in_frame(values, start, end, None, from_end=True)
        nth = (np.asarray(self._argument(call, 1, perm, rows).to_numpy(zero_copy_only=False),
                          dtype=np.int64) if name == "nth_value"
               else np.ones(layout.n, dtype=np.int64))
        return W.nth_in_frame(values, start, end, nth)


@dataclass(frozen=True)
class _CallGroup:
    """Calls spilled together: by ``keys_of`` (over the narrow batches), with only the input
    ``columns`` they read (then the position); ``schema`` is those columns' fields.
    ``streamed``: no keys, ranking over the whole input (:mod:`streamed_ranking`)."""

    columns: list[int]
    schema: Schema
    keys_of: KeysOf
    members: list[int]
    streamed: bool

    def narrow(self, positioned: pa.RecordBatch) -> pa.RecordBatch:
        """A positioned input batch cut to the group's columns and the position."""
        arrays = [positioned.column(i) for i in self.columns]
        arrays.append(positioned.column(positioned.num_columns - 1))
        return pa.RecordBatch.from_arrays(arrays, names=[f"c{i}" for i in range(len(arrays))])

    def widen(self, narrow: pa.RecordBatch, width: int) -> pa.RecordBatch:
        """Rows of the input's ``width`` columns for evaluation: the group's columns, and
        buffer-less null columns in place of those its calls never read."""
        arrays: list[pa.Array] = [pa.nulls(narrow.num_rows)] * width
        for j, i in enumerate(self.columns):
            arrays[i] = narrow.column(j)
        return pa.RecordBatch.from_arrays(arrays, names=[f"c{i}" for i in range(width)])


def _describe_partition(call: WindowCall, partition: list[pa.Array]) -> Callable[[int], str]:
    """Names the window partition of a sorted row, for errors."""
    def describe(row: int) -> str:
        if not partition:
            return "the whole input"
        from flowsql.planner.expressions import render
        values = ", ".join(f"{render(e)} = {p[row].as_py()!r}"
                           for e, p in zip(call.partition_by, partition))
        return f"the partition ({values})"
    return describe
