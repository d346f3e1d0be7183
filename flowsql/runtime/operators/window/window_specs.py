"""What a window aggregate computes, as plain values the SQL layer fills in.

Times are int64 milliseconds. Window TVF semantics follow Flink: a window is
``[window_start, window_end)`` (end exclusive) and fires once the watermark reaches
``window_end - 1``. Parameters are validated at construction because a plan that reaches
the runtime with an impossible window is a planning bug the user should see named.
``window_aggregate_spec`` reads these values off a ``WindowAggregateExec``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from flowsql.errors import PlanError
from flowsql.planner.expressions import AggCall, Expr
from flowsql.planner.logical import WindowShape
from flowsql.planner.physical import STREAMING_AGGREGATE_FUNCTIONS, WindowAggregateExec
from flowsql.planner.udf import UserFunction
from flowsql.runtime.partitioning import DEFAULT_MAX_PARALLELISM

WINDOW_KINDS = ("tumble", "hop", "cumulate", "session")
#: the aggregates a window aggregate computes (``window.accumulators``)
AGGREGATE_FUNCTIONS = STREAMING_AGGREGATE_FUNCTIONS
#: the ``function`` of an AggregateSpec computing a user-defined aggregate
USER_AGGREGATE = "user"


@dataclass(frozen=True)
class WindowSpec:
    """``tumble``: ``size`` (+``offset``); ``hop``: ``slide``, ``size`` (+``offset``);
    ``cumulate``: ``step``, ``size`` (the max size, +``offset``); ``session``: ``gap``,
    partitioned by the group keys."""

    kind: str
    size: int = 0
    slide: int = 0
    step: int = 0
    gap: int = 0
    offset: int = 0

    def __post_init__(self) -> None:
        if self.kind not in WINDOW_KINDS:
            raise PlanError(f"unknown window kind {self.kind!r}")
        if self.kind == "session":
            if self.gap <= 0:
                raise PlanError(f"SESSION gap must be positive, got {self.gap} ms")
            return
        if self.size <= 0:
            raise PlanError(f"{self.kind.upper()} size must be positive, got {self.size} ms")
        unit = {"hop": self.slide, "cumulate": self.step}.get(self.kind)
        if unit is not None and (unit <= 0 or self.size % unit):
            name = "slide" if self.kind == "hop" else "step"
            raise PlanError(f"{self.kind.upper()} {name} ({unit} ms) must be positive and "
                            f"divide the window size ({self.size} ms)")

    @staticmethod
    def tumble(size: int, offset: int = 0) -> WindowSpec:
        return WindowSpec("tumble", size=size, offset=offset)

    @staticmethod
    def hop(slide: int, size: int, offset: int = 0) -> WindowSpec:
        return WindowSpec("hop", size=size, slide=slide, offset=offset)

    @staticmethod
    def cumulate(step: int, size: int, offset: int = 0) -> WindowSpec:
        return WindowSpec("cumulate", size=size, step=step, offset=offset)

    @staticmethod
    def session(gap: int) -> WindowSpec:
        return WindowSpec("session", gap=gap)


def window_spec(shape: WindowShape) -> WindowSpec:
    """The planner's window shape as the runtime's window spec."""
    return WindowSpec(shape.kind, size=shape.size, slide=shape.slide, step=shape.step,
                      gap=shape.gap, offset=shape.offset)


@dataclass(frozen=True)
class AggregateSpec:
    """``function`` over input column ``column`` (None for count_star), output ``name``;
    ``distinct``: over the distinct non-NULL values only. A user-defined aggregate has
    ``function`` USER_AGGREGATE, ``user`` set, and its further arguments in ``columns``."""

    function: str
    column: int | None
    name: str
    distinct: bool = False
    user: UserFunction | None = None
    columns: tuple[int, ...] = ()

    @property
    def argument_columns(self) -> tuple[int, ...]:
        """Every argument column: ``column`` then ``columns``."""
        return (() if self.column is None else (self.column,)) + self.columns

    def __post_init__(self) -> None:
        if self.function == USER_AGGREGATE:
            if self.user is None or self.distinct:
                raise PlanError("a user-defined window aggregate needs its function and "
                                "cannot be DISTINCT")
            return
        if self.function not in AGGREGATE_FUNCTIONS:
            raise PlanError(f"window aggregate does not support {self.function}")
        if (self.column is None) != (self.function == "count_star"):
            raise PlanError(f"{self.function} needs {'no' if self.column is None else 'one'}"
                            " argument column")
        if self.distinct and self.function == "count_star":
            raise PlanError("COUNT(*) cannot be DISTINCT")
        if self.distinct and self.function not in ("count", "sum", "avg", "min", "max"):
            raise PlanError(f"window aggregate does not support DISTINCT {self.function}")


@dataclass(frozen=True)
class WindowAggregateSpec:
    """A window aggregate over input batches of ``input_schema``.

    ``time_column`` is the rowtime (a timestamp of any unit, or int64 ms); ``group_keys``
    are input column positions; ``watermark_column``, when set, holds each row's arrival
    watermark (int64 ms, see ``time.watermarks``) so lateness and firing are decided per
    record as with per-record watermarks. Output columns: the group keys, ``window_start``,
    ``window_end`` (the rowtime's type, millisecond precision), then the aggregates.
    """

    input_schema: pa.Schema
    time_column: int
    window: WindowSpec
    group_keys: tuple[int, ...]
    aggregates: tuple[AggregateSpec, ...]
    watermark_column: int | None = None
    max_parallelism: int = DEFAULT_MAX_PARALLELISM


def aggregate_arguments(aggs: tuple[AggCall, ...]) -> list[Expr]:
    """The argument expressions of ``aggs`` in the order their columns ``x<i>`` are laid
    out: one per built-in aggregate (none for count_star), every argument of a
    user-defined one."""
    return [arg for a in aggs for arg in (a.args if a.function is not None else a.args[:1])]


def aggregate_specs(aggs: tuple[AggCall, ...], first: int) -> list[AggregateSpec]:
    """The specs of ``aggs`` over argument columns laid out by :func:`aggregate_arguments`
    from input position ``first`` on; outputs are named ``a<index>``."""
    specs, position = [], first
    for index, agg in enumerate(aggs):
        if agg.function is not None:
            count = len(agg.args)
            columns = tuple(range(position, position + count))
            specs.append(AggregateSpec(USER_AGGREGATE, columns[0] if columns else None,
                                       f"a{index}", user=agg.function, columns=columns[1:]))
            position += count
            continue
        column = None if agg.name == "count_star" else position
        position += column is not None
        specs.append(AggregateSpec(agg.name, column, f"a{index}", agg.distinct))
    return specs


def narrow_schema(node: WindowAggregateExec) -> pa.Schema:
    """The columns a plan node's rows are evaluated into before windowing: ``rowtime``,
    ``k<i>`` per group key, ``x<i>`` per aggregate argument, then ``watermark`` (each row's
    arrival watermark) when the node generates event-time watermarks."""
    fields = [pa.field("rowtime", pa.timestamp("ms"))]
    fields += [pa.field(f"k{i}", k.dtype) for i, k in enumerate(node.keys)]
    fields += [pa.field(f"x{i}", e.dtype)
               for i, e in enumerate(aggregate_arguments(node.aggs))]
    if node.watermark_delay_ms is not None:
        fields.append(pa.field("watermark", pa.int64()))
    return pa.schema(fields)


def window_aggregate_spec(node: WindowAggregateExec) -> WindowAggregateSpec:
    """What a ``WindowAggregateExec`` computes, over the columns of :func:`narrow_schema`.

    Raises PlanError for an aggregate the window aggregate cannot compute (a FILTER
    clause, or a function outside ``AGGREGATE_FUNCTIONS``), naming it."""
    unsupported = [a.name for a in node.aggs
                   if (a.name not in AGGREGATE_FUNCTIONS and a.function is None)
                   or a.filter is not None]
    if unsupported:
        raise PlanError(f"window aggregate cannot compute {', '.join(unsupported)}")
    aggregates = aggregate_specs(node.aggs, 1 + len(node.keys))
    position = 1 + len(node.keys) + len(aggregate_arguments(node.aggs))
    watermarked = node.watermark_delay_ms is not None
    return WindowAggregateSpec(narrow_schema(node), 0, window_spec(node.shape),
                               tuple(range(1, 1 + len(node.keys))), tuple(aggregates),
                               watermark_column=position if watermarked else None)
