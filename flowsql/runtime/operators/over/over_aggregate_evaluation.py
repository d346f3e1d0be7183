"""OVER aggregates of released rows over the rows their frames can still reach.

The event-time OVER operator releases rows in sets (everything a watermark advance makes
final) and keeps, per partition, the *history* that later frames may still need. This
module is the pure, vectorized core: given the history rows and the released rows of some
partitions, it sorts them together by (partition keys, rowtime, arrival sequence), lays out
partitions and peer groups with the batch engine's :class:`Layout`, turns the frame into
row ranges with :func:`frame_bounds`, and reduces each released row's range with the batch
engine's frame aggregates (:mod:`window_functions`). It also says which rows (or which
per-partition summaries) form the next history.

History rows have one *contribution* per aggregate instead of the raw argument, so that an
UNBOUNDED PRECEDING frame can carry one summary row per partition (the running
accumulators) instead of every row seen:

* ``w`` -- rows the history row stands for (1 for a real row): COUNT(*) sums it;
* ``n<j>`` -- non-NULL argument values it stands for: COUNT and AVG sum it;
* ``v<j>`` -- the value itself, or the partition's SUM (SUM, AVG) / MIN / MAX so far,
  NULL when there was no non-NULL value (the frame functions then skip it, which is
  exactly the NULL semantics of these aggregates).

A user-defined aggregate ``j`` (``runtime.user_functions.frames``) contributes its raw
arguments ``u<j>_<m>``; under an UNBOUNDED frame (class form only) a summary row carries
the partition's accumulator as JSON text in ``a<j>`` (NULL in real rows) and NULL
arguments, and a frame starting at it starts from that accumulator.

A summary row sorts before every row released later because its rowtime is that of the
last row it summarizes, and rows released later are strictly later (an UNBOUNDED frame
drops a row at or behind the watermark as late, and every summarized row was at or behind
it). Bounded frames judge lateness per key: a later row of a partition has a rowtime after
the partition's last released rowtime, which is what their history is cut against.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flowsql.planner import types as T
from flowsql.planner.expressions import AggCall, Expr, Frame, FrameBound, SortKey
from flowsql.runtime.kernels.batches import conform
from flowsql.runtime.operators.over import window_functions as W
from flowsql.runtime.operators.over.window_frames import Layout, frame_bounds
from flowsql.runtime.user_functions.frames import call_per_frame

#: aggregate calls an event-time OVER aggregate computes
SUPPORTED = ("count_star", "count", "sum", "avg", "min", "max")
#: column marking each combined row: its position among the released rows, -1 for history
POSITION = "__position"


def carry_type(agg: AggCall, arg_type: pa.DataType) -> pa.DataType:
    """Type of ``v<j>``: wide enough to hold a running SUM of the argument, the argument's
    own type for MIN / MAX."""
    if agg.name not in ("sum", "avg"):
        return arg_type
    if T.is_integer(arg_type) or pa.types.is_boolean(arg_type):
        return pa.int64()
    if T.is_decimal(arg_type):
        return pa.decimal128(T.MAX_DECIMAL_PRECISION, arg_type.scale)
    return pa.float64()


def contribution_fields(aggs: Sequence[AggCall], arg_types: Sequence[pa.DataType | None],
                        unbounded: bool = False) -> list[pa.Field]:
    """``w`` then, per aggregate, the ``v<j>`` / ``n<j>`` columns it needs (``u<j>_<m>``,
    and ``a<j>`` under an ``unbounded`` frame, for a user-defined one)."""
    fields = [pa.field("w", pa.int64())]
    for j, (agg, arg_type) in enumerate(zip(aggs, arg_types)):
        if agg.function is not None:
            fields += [pa.field(f"u{j}_{m}", a.dtype) for m, a in enumerate(agg.args)]
            if unbounded:
                fields.append(pa.field(f"a{j}", pa.string()))
            continue
        if agg.name in ("sum", "avg", "min", "max"):
            assert arg_type is not None
            fields.append(pa.field(f"v{j}", carry_type(agg, arg_type)))
        if agg.name in ("count", "avg"):
            fields.append(pa.field(f"n{j}", pa.int64()))
    return fields


def contributions(arguments: Sequence[pa.Array | None], fields: Sequence[pa.Field],
                  num_rows: int, user_arguments: Mapping[int, Sequence[pa.Array]] | None = None
                  ) -> list[pa.Array]:
    """The contribution columns (``fields`` of :func:`contribution_fields`) of real rows,
    from each aggregate's argument values (None for COUNT(*)); ``user_arguments`` holds
    every argument of each user-defined aggregate, by aggregate index."""
    columns = []
    for field in fields:
        name = field.name
        if name == "w":
            columns.append(pa.array(np.ones(num_rows, np.int64)))
        elif name[0] == "u":
            j, m = (int(part) for part in name[1:].split("_"))
            assert user_arguments is not None
            columns.append(conform(user_arguments[j][m], field.type))
        elif name[0] == "a":
            columns.append(pa.nulls(num_rows, pa.string()))
        else:
            values = arguments[int(name[1:])]
            assert values is not None
            columns.append(conform(values, field.type) if name[0] == "v" else pa.array(
                values.is_valid().to_numpy(zero_copy_only=False).astype(np.int64)))
    return columns


@dataclass(frozen=True)
class OverFrame:
    """One OVER window: ``mode`` rows | range, ``preceding`` rows or ms (None: unbounded),
    ending at the current row."""

    mode: str
    preceding: int | None
    time_expr: Expr

    @property
    def frame(self) -> Frame:
        start = (FrameBound("unbounded_preceding") if self.preceding is None
                 else FrameBound("preceding", self.preceding))
        return Frame(self.mode, start, FrameBound("current_row"))


@dataclass
class Evaluated:
    """Aggregates of the released rows (in ``order``: released-row positions sorted by
    partition, rowtime, arrival) and the next history of the partitions involved."""

    order: np.ndarray
    values: list[pa.Array]
    history: pa.Table


def evaluate(combined: pa.Table, keys: Sequence[str], aggs: Sequence[AggCall],
             window: OverFrame, history_schema: pa.Schema) -> Evaluated:
    """``combined``: history rows and released rows (``POSITION`` >= 0) of whole
    partitions, with the columns of ``history_schema`` plus ``POSITION``."""
    combined = combined.sort_by([(k, "ascending") for k in keys]
                                + [("ts", "ascending"), ("seq", "ascending")])
    n = combined.num_rows
    ts = combined.column("ts").combine_chunks()
    layout = Layout.of([combined.column(k).combine_chunks() for k in keys], [ts], n)
    frame = window.frame
    start, end = frame_bounds(frame, layout, [SortKey(window.time_expr)], [ts])
    position = combined.column(POSITION).to_numpy()
    released = np.flatnonzero(position >= 0)
    columns = {name: combined.column(name).combine_chunks() for name in history_schema.names
               if _is_contribution(name)}
    values = [_aggregate(agg, j, columns, start[released], end[released], frame, layout)
              if agg.function is None else
              call_per_frame(agg.function, _user_arguments(columns, j, agg),
                             start[released], end[released],
                             _describe(combined, keys, released), columns.get(f"a{j}"))
              for j, agg in enumerate(aggs)]
    return Evaluated(position[released], values,
                     _next_history(combined, columns, layout, window, aggs, frame,
                                   history_schema))


def _is_contribution(name: str) -> bool:
    return name == "w" or (name[0] in "vna" and name[1:].isdigit()) or (
        name[0] == "u" and name[1:].replace("_", "").isdigit())


def _user_arguments(columns: dict[str, pa.Array], j: int, agg: AggCall) -> list[pa.Array]:
    return [columns[f"u{j}_{m}"] for m in range(len(agg.args))]


def _describe(combined: pa.Table, keys: Sequence[str], rows: np.ndarray
              ) -> Callable[[int], str]:
    """Names the partition of ``rows[i]`` (for errors of user-defined aggregates)."""
    def describe(i: int) -> str:
        if not keys:
            return "the whole input"
        values = ", ".join(f"{k} = {combined.column(k)[int(rows[i])].as_py()!r}"
                           for k in keys)
        return f"the partition ({values})"
    return describe


def _weighted(counts: pa.Array, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    prefix = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts.to_numpy(zero_copy_only=False), out=prefix[1:])
    return prefix[end] - prefix[start]


def _aggregate(agg: AggCall, j: int, columns: dict[str, pa.Array], start: np.ndarray,
               end: np.ndarray, frame: Frame, layout: Layout) -> pa.Array:
    """One aggregate over ``[start, end)`` per row, in the carry types (not yet cast to the
    call's result type)."""
    if agg.name == "count_star":
        return pa.array(_weighted(columns["w"], start, end))
    if agg.name == "count":
        return pa.array(_weighted(columns[f"n{j}"], start, end))
    values = columns[f"v{j}"]
    if agg.name == "sum":
        return W.frame_sum(values, start, end)
    if agg.name == "avg":
        total = W.frame_sum(values, start, end, as_float=True)
        counts = _weighted(columns[f"n{j}"], start, end)
        return pc.divide(total, pa.array(np.maximum(counts, 1).astype(np.float64)))
    return W.frame_extreme(values, start, end, frame, layout, agg.name == "max")


def _next_history(combined: pa.Table, columns: dict[str, pa.Array], layout: Layout,
                  window: OverFrame, aggs: Sequence[AggCall], frame: Frame,
                  history_schema: pa.Schema) -> pa.Table:
    """What later frames can still reach: for a RANGE of ``p`` ms the rows with rowtime >
    last - p, ``last`` being the partition's largest rowtime (a later row of the partition
    has a larger one); for ROWS ``p`` the last ``p`` rows of each partition; for UNBOUNDED
    one summary row per partition."""
    kept = combined.select(history_schema.names)
    if window.preceding is not None:
        if window.mode == "range":
            ts = combined.column("ts").to_numpy()
            keep = ts > ts[layout.part_end - 1] - window.preceding
        else:
            keep = layout.index >= layout.part_end - window.preceding
        return kept.filter(pa.array(keep))
    last = np.flatnonzero(layout.index == layout.part_end - 1)
    start, end = layout.part_start[last], layout.part_end[last]
    summary = kept.take(pa.array(last))
    for name in filter(_is_contribution, history_schema.names):
        if name[0] == "u":  # a summary row carries its user aggregates in a<j>
            value: pa.Array = pa.nulls(len(last), history_schema.field(name).type)
        elif name[0] == "a":
            j = int(name[1:])
            function = aggs[j].function
            assert function is not None
            value = call_per_frame(function, _user_arguments(columns, j, aggs[j]), start,
                                   end, _describe(combined, [], last), columns[name],
                                   accumulators=True)
        elif name[0] != "v":
            value = pa.array(_weighted(columns[name], start, end))
        elif aggs[int(name[1:])].name in ("sum", "avg"):
            value = W.frame_sum(columns[name], start, end)
        else:
            value = W.frame_extreme(columns[name], start, end, frame, layout,
                                    aggs[int(name[1:])].name == "max")
        index = summary.schema.get_field_index(name)
        summary = summary.set_column(index, history_schema.field(name),
                                     conform(value, history_schema.field(name).type))
    return summary
