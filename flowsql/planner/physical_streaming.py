"""Physical nodes that exist only in streaming plans (``execution.runtime-mode`` =
``streaming``).

The streaming planning pass (``optimizer/streaming``) turns a batch physical plan into one
of these where the batch algorithm would need to see its whole input first: an unwindowed
aggregate becomes a changelog ``GroupAggregateExec`` (a ``WindowedAggregateExec`` when it
groups by the window bounds its input already carries), a join a ``StreamJoinExec`` (or an
``IntervalJoinExec`` when its condition bounds the two rowtimes, a ``WindowJoinExec`` when it
joins two windowed inputs on their window bounds, a ``LookupJoinExec`` for ``FOR
SYSTEM_TIME AS OF``), ROW_NUMBER filters a
``RankExec``, OVER aggregates ordered by a rowtime an ``OverAggregateExec``; scans of tables
with a WATERMARK get a ``WatermarkAssignerExec`` above them, an operator whose time attribute
is a ``PROCTIME()`` column gets a ``ProctimeWatermarkExec`` below it, and ``INSERT INTO``
ends in a ``SinkExec``. Expressions resolve against the input schema(s) by column id, as everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import AggCall, Expr, SortKey
from flowsql.planner.physical import PhysicalPlan, _Binary, _join_schema, _Unary
from flowsql.planner.schema import Field, Schema

#: changelog modes of a streaming node's output (``runtime.changelog`` says how each one
#: travels as batches)
INSERT_ONLY, UPDATING = "insert-only", "updating"


@dataclass(frozen=True, eq=False)
class WatermarkAssignerExec(_Unary):
    """Forwards its input unchanged and emits watermarks ``max(time_column) - delay_ms``
    (Flink's bounded out-of-orderness): after every record when ``interval_ms`` is 0,
    otherwise at most every ``interval_ms`` of wall-clock time."""

    input: PhysicalPlan
    time_column: Expr
    delay_ms: int
    interval_ms: int
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.input.schema


@dataclass(frozen=True, eq=False)
class ProctimeWatermarkExec(_Unary):
    """Processing time as event time: forwards its input unchanged and emits the wall
    clock, in epoch milliseconds minus one, as the watermark after every batch and while
    idle; upstream watermarks stop here. ``time_column`` is the ``PROCTIME()`` attribute
    the consumer above uses as its time (named in EXPLAIN).

    Minus one because the consumer's windows fire at ``window_end - 1``: every row read
    after the watermark has a proctime at or above the clock reading, hence strictly
    above the watermark, so no row is ever late."""

    input: PhysicalPlan
    time_column: Expr
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.input.schema


#: the built-in aggregates a GroupAggregateExec computes beside user-defined (class-form)
#: aggregates, as accumulators of the same shape
BESIDE_USER_AGGREGATES = ("count", "count_star", "sum", "avg")


@dataclass(frozen=True, eq=False)
class GroupAggregateExec(_Unary):
    """GROUP BY without windows over a stream: a changelog (+I, -U/+U, -D) of each group's
    current result. Output: group fields then agg fields, always updating. With a
    user-defined aggregate among ``aggs`` (which must then be class-form aggregates, with
    ``retract`` over an updating input) the other aggregates are BESIDE_USER_AGGREGATES.
    ``insert_only_input``: the input never retracts, so MIN/MAX keep only the current
    extreme per group, not every value a retraction of it would need."""

    input: PhysicalPlan
    group_exprs: tuple[Expr, ...]
    group_fields: Schema
    aggs: tuple[AggCall, ...]
    agg_fields: Schema
    est_rows: float
    insert_only_input: bool = False

    @property
    def schema(self) -> Schema:
        return (*self.group_fields, *self.agg_fields)


@dataclass(frozen=True, eq=False)
class WindowedAggregateExec(_Unary):
    """GROUP BY keys, window_start, window_end over an insert-only input that already
    carries those window bounds (a window join, window Top-N or window aggregate below:
    Flink's cascading window aggregation). ``window`` names the input's (window_start,
    window_end); both are among ``group_exprs``. Each group is emitted once, insert-only,
    when the watermark reaches ``window_end - 1``; rows of a window that already fired
    are dropped as late. Output: group fields then agg fields, like ``GroupAggregateExec``."""

    input: PhysicalPlan
    group_exprs: tuple[Expr, ...]
    group_fields: Schema
    aggs: tuple[AggCall, ...]
    agg_fields: Schema
    window: tuple[Expr, Expr]
    est_rows: float

    @property
    def schema(self) -> Schema:
        return (*self.group_fields, *self.agg_fields)


@dataclass(frozen=True, eq=False)
class StreamJoinExec(_Binary):
    """A regular (unbounded) join: both inputs held in state, results retracted when an
    input row is retracted or an outer row finds its first partner. ``updating`` says
    whether the output carries row kinds (an outer join, or an updating input)."""

    left: PhysicalPlan
    right: PhysicalPlan
    kind: str
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    residual: Expr | None
    updating: bool
    est_rows: float

    @property
    def schema(self) -> Schema:
        return _join_schema(self.kind, self.left.schema, self.right.schema, None)


@dataclass(frozen=True, eq=False)
class LookupJoinExec(_Unary):
    """Flink's processing-time lookup join (``JOIN t FOR SYSTEM_TIME AS OF l.proctime``)
    into a bounded table: ``input`` is the probe stream (the join's left side), ``table``
    the looked-up side as a bounded batch plan -- not an input of the dataflow: the
    operator runs it itself when it opens, as Flink's lookup join queries its lookup
    source. Each probe row is joined with the table's rows on ``left_keys[i] =
    right_keys[i]`` and ``residual`` as it arrives; no probe row is kept, and the output
    is insert-only (``kind`` inner or left)."""

    input: PhysicalPlan
    table: PhysicalPlan
    kind: str
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    residual: Expr | None
    est_rows: float

    @property
    def schema(self) -> Schema:
        return _join_schema(self.kind, self.input.schema, self.table.schema, None)


@dataclass(frozen=True, eq=False)
class IntervalJoinExec(_Binary):
    """A join whose condition bounds the rowtimes: ``left_time + lower_ms <= right_time <=
    left_time + upper_ms``; rows leave state once the watermark rules out new partners."""

    left: PhysicalPlan
    right: PhysicalPlan
    kind: str
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    left_time: Expr
    right_time: Expr
    lower_ms: int
    upper_ms: int
    residual: Expr | None
    est_rows: float

    @property
    def schema(self) -> Schema:
        return _join_schema(self.kind, self.left.schema, self.right.schema, None)


@dataclass(frozen=True, eq=False)
class WindowJoinExec(_Binary):
    """Flink's window join: both inputs carry window bounds (a window TVF, window aggregate
    or window Top-N upstream) and the condition equates them. ``left_keys``/``right_keys``
    are all equi keys, the window bounds included; ``left_window``/``right_window`` name
    each side's (window_start, window_end). Rows are buffered per window and joined once,
    when the watermark passes ``window_end - 1``; the output is insert-only for every kind
    (inner, left, right, full, semi, anti), and rows of a window that already fired are
    dropped as late."""

    left: PhysicalPlan
    right: PhysicalPlan
    kind: str
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    left_window: tuple[Expr, Expr]
    right_window: tuple[Expr, Expr]
    residual: Expr | None
    est_rows: float

    @property
    def schema(self) -> Schema:
        return _join_schema(self.kind, self.left.schema, self.right.schema, None)


@dataclass(frozen=True, eq=False)
class OverAggregateExec(_Unary):
    """Aggregates OVER (PARTITION BY keys ORDER BY rowtime frame): each row once, when the
    watermark passes its rowtime, with ``fields`` appended. ``frame`` is ``rows`` or
    ``range``; ``preceding`` rows or milliseconds (None: unbounded)."""

    input: PhysicalPlan
    partition_keys: tuple[Expr, ...]
    time_column: Expr
    frame: str
    preceding: int | None
    aggs: tuple[AggCall, ...]
    fields: Schema
    est_rows: float

    @property
    def schema(self) -> Schema:
        return (*self.input.schema, *self.fields)


@dataclass(frozen=True, eq=False)
class RankExec(_Unary):
    """ROW_NUMBER() OVER (PARTITION BY keys ORDER BY order) kept where ``lower <= rn <=
    upper``: Top-N, or deduplication when ``time_attribute`` (rowtime or proctime) says the
    single order key is a time attribute and the range is exactly 1. ``window`` names the
    window_start/window_end expressions of a window Top-N (None: unwindowed).
    ``rank_field`` (None: the row number is not selected) is appended to the input fields."""

    input: PhysicalPlan
    partition_keys: tuple[Expr, ...]
    order: tuple[SortKey, ...]
    lower: int
    upper: int
    rank_field: Field | None
    time_attribute: str | None
    window: tuple[Expr, Expr] | None
    est_rows: float

    @property
    def schema(self) -> Schema:
        return (*self.input.schema, *((self.rank_field,) if self.rank_field else ()))


@dataclass(frozen=True, eq=False)
class SinkExec(_Unary):
    """Writes its input into ``table`` (INSERT INTO); emits nothing."""

    input: PhysicalPlan
    table: TableEntry
    est_rows: float

    @property
    def schema(self) -> Schema:
        return ()
