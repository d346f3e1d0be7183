"""One group too large to hold, aggregated without holding it.

A hash aggregate whose aggregates cannot all be merged as partials holds each group's
argument columns; a group whose columns outgrow the memory budget cannot be split by its
keys (the grand total ``()`` of ROLLUP / CUBE, a global aggregate, one hot key). Such a
spilled group is still computable aggregate by aggregate while its run is read batch by
batch:

* mergeable aggregates (``partial_aggregates``, the variance family among them) --
  partials per batch, merged;
* DISTINCT count / sum / avg / variance -- the argument alone is partitioned by a hash of
  its value (each batch deduplicated first), so equal values meet in one partition and
  the partitions' distinct values are disjoint: each partition's distinct values give a
  partial (their count, their sum, their count, mean and M2 combined by Chan et al.'s
  parallel formula), and the partials add up. A value partition still too large is
  partitioned again one level deeper. Several DISTINCT aggregates are each partitioned by
  their own argument.

User-defined aggregates without ``merge`` need all their rows at once: :func:`computable`
says no and the operator fails naming the group.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ResourceExhausted
from flowsql.planner.expressions import AggCall
from flowsql.runtime.kernels.held_memory import HeldMemory
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.aggregate import partial_aggregates as partials
from flowsql.runtime.operators.aggregate.spilled_groups import (
    MAX_LEVEL,
    SpilledGroups,
    coalesced,
)
from flowsql.runtime.spill import SpillRun

VARIANCE = partials.VARIANCE
_DISTINCT_BY_VALUE = {"count", "sum", "avg", *VARIANCE}
#: bytes of a value partition re-partitioned at a time
_SPLIT_BYTES = 64 << 20
_VALUE = "v"
_CONSTANT = "k"


def computable(aggs: Sequence[AggCall]) -> bool:
    """Can every aggregate of ``aggs`` be computed streaming over one group's rows?"""
    return all(agg.function is None
               and (partials.mergeable([agg])
                    or (agg.distinct and agg.name in _DISTINCT_BY_VALUE))
               for agg in aggs)


@dataclass
class _Moments:
    """Count, mean and M2 (sum of squared deviations from the mean) of some doubles."""

    count: int = 0
    mean: float = 0.0
    m2: float = 0.0

    @staticmethod
    def of(values: pa.Array | pa.ChunkedArray) -> _Moments:
        data = pc.drop_null(values).cast(pa.float64()).to_numpy()
        if len(data) == 0:
            return _Moments()
        mean = float(np.mean(data))
        return _Moments(len(data), mean, float(np.sum((data - mean) ** 2)))

    def add(self, other: _Moments) -> None:
        """Combine ``other``'s values into these (Chan, Golub and LeVeque)."""
        if other.count == 0:
            return
        total = self.count + other.count
        delta = other.mean - self.mean
        self.mean += delta * other.count / total
        self.m2 += other.m2 + delta * delta * self.count * other.count / total
        self.count = total

    def value(self, name: str) -> float | None:
        ddof, root = VARIANCE[name]
        if self.count <= ddof:
            return None
        variance = max(self.m2, 0.0) / (self.count - ddof)
        return math.sqrt(variance) if root else variance


def aggregate(context: OperatorContext, memory: HeldMemory, run: SpillRun,
              aggs: Sequence[AggCall]) -> list[pa.Array]:
    """One single-row column per aggregate of ``aggs`` over ``run`` (one group's rows,
    arguments ``a<i>``). The run is read, not deleted."""
    columns: list[pa.Array | None] = [None] * len(aggs)
    merged = [i for i, agg in enumerate(aggs) if partials.mergeable([agg])]
    if merged:
        values = _mergeable(run, [aggs[i] for i in merged], merged)
        for i, value in zip(merged, values):
            columns[i] = value
    for i, agg in enumerate(aggs):
        if columns[i] is not None:
            continue
        columns[i] = _distinct(context, memory, run, f"a{i}", agg)
    return [c for c in columns if c is not None]


def _mergeable(run: SpillRun, aggs: list[AggCall], indices: list[int]) -> list[pa.Array]:
    """The mergeable aggregates ``aggs`` (whose arguments are ``a<i>`` for ``indices``)
    over ``run``."""
    pieces: list[pa.Table] = []
    for batch in run.read():
        table = pa.table([pa.array(np.zeros(batch.num_rows, np.int8))]
                         + [batch.column(f"a{i}") for i in indices],
                         names=[_CONSTANT] + [f"a{j}" for j in range(len(indices))])
        pieces.append(partials.partial(table, [_CONSTANT], aggs))
        if len(pieces) > 64:
            pieces = [partials.merge(pa.concat_tables(pieces), [_CONSTANT], aggs)]
    merged = partials.merge(pa.concat_tables(pieces), [_CONSTANT], aggs)
    return [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
            for c in partials.final(merged, aggs)]


def _distinct(context: OperatorContext, memory: HeldMemory, run: SpillRun, column: str,
              agg: AggCall) -> pa.Array:
    """DISTINCT count / sum / avg / variance of ``column`` over ``run``."""
    count = 0
    sums: list[pa.Scalar] = []
    moments = _Moments()
    for values in _distinct_values(context, memory,
                                   (_values(b.column(column)) for b in run.read()), 0):
        count += len(values)
        if agg.name in ("sum", "avg"):
            sums.append(pc.sum(values))
        elif agg.name in VARIANCE:
            moments.add(_Moments.of(values))
    if agg.name == "count":
        return pa.array([count], pa.int64())
    if agg.name in VARIANCE:
        return pa.array([moments.value(agg.name)], pa.float64())
    total = _total(sums, run.schema.field(column).type)
    if agg.name == "sum":
        return total
    return pa.array([None if count == 0 else total[0].as_py() / count], pa.float64())


def _total(sums: list[pa.Scalar], dtype: pa.DataType) -> pa.Array:
    """The sum of partial sums as a one-row column (NULL for none)."""
    if not sums:
        return pa.nulls(1, dtype)
    column = pa.array([s.as_py() for s in sums], sums[0].type)
    total = pc.sum(column, min_count=1)
    return pa.array([total.as_py()], total.type)


def _values(column: pa.Array | pa.ChunkedArray) -> pa.RecordBatch:
    """``column``'s distinct non-NULL values as a one-column batch."""
    table = pa.table({_VALUE: pc.drop_null(column)}).group_by(_VALUE).aggregate([])
    return pa.RecordBatch.from_arrays([table.column(_VALUE).combine_chunks()],
                                      names=[_VALUE])


def _distinct_values(context: OperatorContext, memory: HeldMemory,
                     batches: Iterator[pa.RecordBatch], level: int) -> Iterator[pa.Array]:
    """Disjoint sets of distinct values whose union is the distinct values of
    ``batches``: one set per hash partition of the values, each held while it is
    deduplicated."""
    spilled: SpilledGroups | None = None
    try:
        for batch in batches:
            if spilled is None:
                spilled = SpilledGroups(context, batch.schema, [_VALUE], level)
            spilled.add(batch)
        if spilled is None:
            return
        for part in spilled.finish():
            if part is not None:
                yield from _partition_values(context, memory, part, level)
    finally:
        if spilled is not None:
            spilled.delete()


def _partition_values(context: OperatorContext, memory: HeldMemory, run: SpillRun,
                      level: int) -> Iterator[pa.Array]:
    if memory.try_hold(run.nbytes) or (
            level + 1 > MAX_LEVEL and memory.try_hold(run.nbytes, beyond_share=True)):
        try:
            values = _values(run.read_table().column(_VALUE)).column(0)
        finally:
            memory.release(run.nbytes)
        run.delete()
        yield values
        return
    if level + 1 > MAX_LEVEL:
        run.delete()
        raise ResourceExhausted(
            f"{context.name}: the distinct values of one group hold "
            f"{run.nbytes / 2**20:.1f} MiB, more than execution.memory-budget allows; raise "
            "the budget with SET 'execution.memory-budget' = '...'")
    available = context.memory.available
    size = _SPLIT_BYTES if available is None else max(1, min(available // 2, _SPLIT_BYTES))
    batches = (_values(b.column(_VALUE)) for b in coalesced(run, size))
    yield from _distinct_values(context, memory, batches, level + 1)
    run.delete()
