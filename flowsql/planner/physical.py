"""Physical plan nodes: each names an algorithm and carries its estimates.

Expressions inside physical nodes are the same bound expressions as in the logical plan;
column references resolve against the node's input schema(s) by column id. For joins, key
expressions resolve against their own side and the residual against left fields followed by
right fields.

``est_rows`` is the optimizer's cardinality estimate, shown by EXPLAIN.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import AggCall, Expr, SortKey, WindowCall
from flowsql.planner.logical import WindowShape
from flowsql.planner.schema import Field, Schema
from flowsql.planner.udf import UserFunction


class PhysicalPlan:
    """Base of physical nodes: ``schema``, ``inputs``, ``est_rows``."""

    est_rows: float

    @property
    def schema(self) -> Schema:
        raise NotImplementedError

    @property
    def inputs(self) -> tuple[PhysicalPlan, ...]:
        return ()

    def with_inputs(self, inputs: tuple[PhysicalPlan, ...]) -> PhysicalPlan:
        return self


@dataclass(frozen=True)
class SourceWatermark:
    """A watermark generated inside a source (Flink's watermark push-down), for sources
    that read several splits (Kafka partitions): per split ``max(time) - delay_ms`` and
    the source's watermark is the minimum over its active splits, so one split read ahead
    of another does not make the other's records late. ``time`` is an expression over the
    scan's ``fields`` (a column, or a computed column's expression); ``interval_ms`` as
    the watermark assigner's (0: after every batch that advances it)."""

    time: Expr
    delay_ms: int
    interval_ms: int


@dataclass(frozen=True, eq=False)
class TableScanExec(PhysicalPlan):
    """Read columns ``fields`` of ``table``; ``filters`` are pushed to the reader (row-group
    pruning for Parquet) and also applied exactly to every batch. ``watermark``: the
    source emits watermarks itself (see :class:`SourceWatermark`); None for a source
    whose watermarks, if any, come from a ``WatermarkAssignerExec`` above it. A scan of a
    changelog source (debezium-json, upsert-kafka) emits row kinds after ``fields``
    (``runtime.changelog``)."""

    table: TableEntry
    fields: Schema
    filters: tuple[Expr, ...]
    est_rows: float
    watermark: SourceWatermark | None = None

    @property
    def schema(self) -> Schema:
        return self.fields


@dataclass(frozen=True, eq=False)
class ValuesExec(PhysicalPlan):
    fields: Schema
    rows: tuple[tuple[Expr, ...], ...]
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.fields


class _Unary(PhysicalPlan):
    input: PhysicalPlan

    @property
    def inputs(self) -> tuple[PhysicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[PhysicalPlan, ...]) -> PhysicalPlan:
        return replace(self, input=inputs[0])  # type: ignore[type-var]


class _Binary(PhysicalPlan):
    """A node with two inputs, ``left`` (input 0) and ``right`` (input 1)."""

    left: PhysicalPlan
    right: PhysicalPlan

    @property
    def inputs(self) -> tuple[PhysicalPlan, ...]:
        return (self.left, self.right)

    def with_inputs(self, inputs: tuple[PhysicalPlan, ...]) -> PhysicalPlan:
        return replace(self, left=inputs[0], right=inputs[1])  # type: ignore[type-var]


@dataclass(frozen=True, eq=False)
class FilterExec(_Unary):
    input: PhysicalPlan
    predicate: Expr
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.input.schema


@dataclass(frozen=True, eq=False)
class ProjectExec(_Unary):
    input: PhysicalPlan
    exprs: tuple[Expr, ...]
    fields: Schema
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.fields


@dataclass(frozen=True, eq=False)
class HashJoinExec(_Binary):
    """Equi-join on ``left_keys[i] = right_keys[i]`` plus an optional ``residual``.

    ``kind`` as in the logical Join (inner, left, right, full, semi, anti, mark, single).
    ``build_side`` is the side held in the hash table (the optimizer picks the smaller).
    ``null_aware`` (anti and mark): NOT IN / IN semantics with NULL keys. Keys never match
    on NULL (SQL equality). ``lookup``: the logical join was a lookup join (``FOR
    SYSTEM_TIME AS OF``); batch runs it as this hash join (build right), streaming as a
    ``LookupJoinExec``.
    """

    left: PhysicalPlan
    right: PhysicalPlan
    kind: str
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    residual: Expr | None
    build_side: str
    est_rows: float
    mark: Field | None = None
    null_aware: bool = False
    lookup: bool = False

    @property
    def schema(self) -> Schema:
        return _join_schema(self.kind, self.left.schema, self.right.schema, self.mark)


@dataclass(frozen=True, eq=False)
class SortMergeJoinExec(_Binary):
    """Equi-join of two inputs both sorted ascending (NULLS LAST) on their join keys
    (``left_keys[i] = right_keys[i]``), plus an optional ``residual``; no hash table.

    ``kind``: inner, left, right, full, semi or anti (no mark or null-aware variants: those
    stay hash joins). The output keeps the left input's order, so it is sorted on the left
    keys (and, for inner and left joins, equally on the right keys) and can serve an ORDER BY
    or an aggregate over those keys above it. Keys never match on NULL.
    """

    left: PhysicalPlan
    right: PhysicalPlan
    kind: str
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    residual: Expr | None
    est_rows: float

    @property
    def schema(self) -> Schema:
        return _join_schema(self.kind, self.left.schema, self.right.schema, None)


@dataclass(frozen=True, eq=False)
class NestedLoopJoinExec(_Binary):
    """Join without equality keys: every left row against every right row, filtered by
    ``condition`` (None: cross product). Same kinds as HashJoinExec."""

    left: PhysicalPlan
    right: PhysicalPlan
    kind: str
    condition: Expr | None
    est_rows: float
    mark: Field | None = None
    null_aware: bool = False

    @property
    def schema(self) -> Schema:
        return _join_schema(self.kind, self.left.schema, self.right.schema, self.mark)


def _join_schema(kind: str, left: Schema, right: Schema, mark: Field | None) -> Schema:
    if kind in ("semi", "anti"):
        return left
    if kind == "mark":
        assert mark is not None
        return (*left, mark)
    if kind in ("right", "full"):
        left = tuple(f.as_nullable() for f in left)
    if kind in ("left", "full", "single"):
        right = tuple(f.as_nullable() for f in right)
    return (*left, *right)


@dataclass(frozen=True, eq=False)
class HashAggregateExec(_Unary):
    """Group by ``group_exprs`` and compute ``aggs``; output group fields then agg fields.
    With no group expressions, exactly one row (aggregates over the empty input give
    COUNT 0 and NULL for the others)."""

    input: PhysicalPlan
    group_exprs: tuple[Expr, ...]
    group_fields: Schema
    aggs: tuple[AggCall, ...]
    agg_fields: Schema
    est_rows: float

    @property
    def schema(self) -> Schema:
        return (*self.group_fields, *self.agg_fields)


@dataclass(frozen=True, eq=False)
class SortAggregateExec(_Unary):
    """A streaming aggregate over input sorted on ``group_exprs`` (ascending, NULLS LAST):
    a group is complete, and emitted, as soon as the next group's first row arrives, so it
    holds one group at a time instead of a hash table. Output as :class:`HashAggregateExec`,
    in the order of the groups (so sorted on the group fields)."""

    input: PhysicalPlan
    group_exprs: tuple[Expr, ...]
    group_fields: Schema
    aggs: tuple[AggCall, ...]
    agg_fields: Schema
    est_rows: float

    @property
    def schema(self) -> Schema:
        return (*self.group_fields, *self.agg_fields)


@dataclass(frozen=True, eq=False)
class WindowExec(_Unary):
    input: PhysicalPlan
    calls: tuple[WindowCall, ...]
    fields: Schema
    est_rows: float

    @property
    def schema(self) -> Schema:
        return (*self.input.schema, *self.fields)


@dataclass(frozen=True, eq=False)
class SortExec(_Unary):
    input: PhysicalPlan
    keys: tuple[SortKey, ...]
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.input.schema


@dataclass(frozen=True, eq=False)
class TopNExec(_Unary):
    """ORDER BY keys LIMIT limit OFFSET offset, keeping only limit+offset rows in memory."""

    input: PhysicalPlan
    keys: tuple[SortKey, ...]
    limit: int
    offset: int
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.input.schema


@dataclass(frozen=True, eq=False)
class LimitExec(_Unary):
    input: PhysicalPlan
    limit: int | None
    offset: int
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.input.schema


@dataclass(frozen=True, eq=False)
class SetOpExec(_Binary):
    """UNION / INTERSECT / EXCEPT [ALL] by position; inputs already have the output types."""

    left: PhysicalPlan
    right: PhysicalPlan
    kind: str
    all: bool
    fields: Schema
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.fields


@dataclass(frozen=True, eq=False)
class TableFunctionExec(_Unary):
    """``LATERAL TABLE(function(args))`` over each input batch: the function is called
    once per batch with the argument arrays and returns rows tagged with the input row
    they belong to (``runtime/operators/table_function.py`` states the contract); the
    output is each input row followed by ``fields``. ``outer`` keeps an input row that got
    no rows once, with NULLs. Stateless; row kinds of an updating input pass through."""

    input: PhysicalPlan
    function: UserFunction
    args: tuple[Expr, ...]
    fields: Schema
    outer: bool
    est_rows: float

    @property
    def schema(self) -> Schema:
        return (*self.input.schema, *self.fields)


@dataclass(frozen=True, eq=False)
class WindowTableFunctionExec(_Unary):
    """A window TVF on its own: each input row once per (fixed) window it belongs to, with
    ``window_fields`` (window_start, window_end, window_time) appended. Stateless and
    row-order preserving; SESSION needs the aggregate form (WindowAggregateExec)."""

    input: PhysicalPlan
    shape: WindowShape
    time_column: Expr
    window_fields: Schema
    est_rows: float

    @property
    def schema(self) -> Schema:
        return (*self.input.schema, *self.window_fields)


#: ``WindowAggregateExec.group_slots`` entries naming the window bounds and the window's
#: time (``window_end - 1 ms``, the TVF's window_time: a rowtime attribute of the result)
WINDOW_START = "window_start"
WINDOW_END = "window_end"
WINDOW_TIME = "window_time"


#: aggregates computed from count, sum and sum of squares (retractable and mergeable), so
#: the streaming aggregates compute them without DISTINCT
VARIANCE_FUNCTIONS = ("var_pop", "var_samp", "stddev_pop", "stddev_samp")
#: the aggregate functions a streaming aggregate (changelog GROUP BY, window aggregate)
#: computes; the optimizer plans by this list and the runtime checks it
STREAMING_AGGREGATE_FUNCTIONS = ("count", "count_star", "sum", "min", "max", "avg",
                                 *VARIANCE_FUNCTIONS)


@dataclass(frozen=True, eq=False)
class WindowAggregateExec(_Unary):
    """GROUP BY window_start, window_end, keys over a window TVF, by event time (Flink's
    window aggregate): each window emits its rows once, when the watermark passes its end
    (at end of input for bounded input), and records arriving after their windows fired
    are dropped as late.

    ``time_column``, ``keys`` and the arguments of ``aggs`` are expressions over the TVF's
    *input*; ``group_slots[i]`` says where group field ``i`` comes from: WINDOW_START,
    WINDOW_END, WINDOW_TIME, or an index into ``keys``. Output: group fields then agg
    fields, like the Aggregate it replaces. ``predicate`` (a WHERE between the TVF and the GROUP BY) drops
    rows *after* they have advanced the watermark, as a filter above Flink's source does. ``watermark_delay_ms`` (None: no watermark; every window fires
    at end of input) turns on per-record watermarks generated from ``time_column`` in
    input order, emitted every ``watermark_interval_ms`` (0: after every record).
    """

    input: PhysicalPlan
    shape: WindowShape
    time_column: Expr
    keys: tuple[Expr, ...]
    group_slots: tuple[int | str, ...]
    group_fields: Schema
    aggs: tuple[AggCall, ...]
    agg_fields: Schema
    est_rows: float
    predicate: Expr | None = None
    watermark_delay_ms: int | None = None
    watermark_interval_ms: int = 0

    @property
    def schema(self) -> Schema:
        return (*self.group_fields, *self.agg_fields)


EXCHANGE_KINDS = ("hash", "broadcast", "rebalance", "gather", "forward")


@dataclass(frozen=True, eq=False)
class ExchangeExec(_Unary):
    """Redistributes its input between subtasks; placed by the distribution pass only.

    ``kind``: hash (rows go to the subtask owning the key group of ``keys``), broadcast
    (every subtask gets every row), rebalance (round-robin batches), gather (everything to
    one subtask) or forward (same subtask, no redistribution). ``keys`` are expressions over
    the input schema and are set exactly for hash; both sides of a co-partitioned join hash
    keys of identical types, so equal values land on the same subtask.
    """

    input: PhysicalPlan
    kind: str
    keys: tuple[Expr, ...]
    est_rows: float

    def __post_init__(self) -> None:
        if self.kind not in EXCHANGE_KINDS:
            raise ValueError(f"unknown exchange kind '{self.kind}'")
        if (self.kind == "hash") != bool(self.keys):
            raise ValueError("a hash exchange needs keys; other exchanges take none")

    @property
    def schema(self) -> Schema:
        return self.input.schema


@dataclass(frozen=True, eq=False)
class SharedSubplanExec(_Unary):
    """The first of several identical subplans (``optimizer/share_subplans``): ``input``
    runs once per job (once per subtask in a parallel stage), its output is buffered, and
    this node and every :class:`ReuseSubplanExec` with the same ``share_id`` each read the
    whole buffer. Batch plans only; ``input`` is deterministic and contains no exchange."""

    input: PhysicalPlan
    share_id: int
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.input.schema


@dataclass(frozen=True, eq=False)
class ReuseSubplanExec(PhysicalPlan):
    """A leaf reading the output of the :class:`SharedSubplanExec` with ``share_id``, in
    the same stage. Columns line up by position; ``fields`` are the ids of the copy this
    node replaced (each reference to a CTE or view is bound with fresh column ids), so the
    nodes above keep referring to the columns they referred to."""

    share_id: int
    fields: Schema
    est_rows: float

    @property
    def schema(self) -> Schema:
        return self.fields
