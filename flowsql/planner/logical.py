"""Logical plan nodes: immutable, typed, validated at construction.

Every node knows its output ``schema`` (a tuple of :class:`Field`) and its ``inputs``.
``with_inputs`` returns a copy over new inputs; ``expressions`` / ``with_expressions`` give
rewrite rules uniform access to the expressions a node holds. Nodes compare by identity.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from flowsql.errors import PlanError
from flowsql.planner import types as T
from flowsql.planner.catalog import TableEntry
from flowsql.planner.expressions import (
    AggCall,
    Expr,
    SortKey,
    WindowCall,
    column_ids,
)
from flowsql.planner.schema import Field, Schema
from flowsql.planner.udf import TABLE, UserFunction

JOIN_KINDS = ("inner", "left", "right", "full", "cross", "semi", "anti", "mark", "single")
SET_KINDS = ("union", "intersect", "except")


class LogicalPlan:
    """Base of logical nodes."""

    @property
    def schema(self) -> Schema:
        raise NotImplementedError

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return ()

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return self

    def expressions(self) -> tuple[Expr, ...]:
        return ()

    def with_expressions(self, exprs: tuple[Expr, ...]) -> LogicalPlan:
        return self

    @property
    def column_ids(self) -> set[int]:
        return {f.cid for f in self.schema}

    def _check_refs(self, exprs: tuple[Expr, ...], available: set[int], what: str) -> None:
        """Column references must point at fields of the inputs (or outer queries, which
        the caller allows by passing ``available`` = None)."""
        for e in exprs:
            missing = column_ids(e) - available
            if missing:
                raise PlanError(f"{type(self).__name__}: {what} '{e}' refers to columns "
                                f"not produced by its input (ids {sorted(missing)})")


@dataclass(frozen=True, eq=False)
class Scan(LogicalPlan):
    """Read ``fields`` (columns of ``table``, matched by name) and keep rows where every
    predicate of ``filters`` holds (filters pushed into the scan)."""

    table: TableEntry
    fields: Schema
    filters: tuple[Expr, ...] = ()
    alias: str | None = None

    @property
    def schema(self) -> Schema:
        return self.fields

    def expressions(self) -> tuple[Expr, ...]:
        return self.filters

    def with_expressions(self, exprs: tuple[Expr, ...]) -> LogicalPlan:
        return replace(self, filters=tuple(exprs))


@dataclass(frozen=True, eq=False)
class Values(LogicalPlan):
    """Literal rows. A SELECT without FROM is one row with no columns."""

    fields: Schema
    rows: tuple[tuple[Expr, ...], ...]

    @property
    def schema(self) -> Schema:
        return self.fields

    def expressions(self) -> tuple[Expr, ...]:
        return tuple(e for row in self.rows for e in row)


@dataclass(frozen=True, eq=False)
class Filter(LogicalPlan):
    input: LogicalPlan
    predicate: Expr

    def __post_init__(self) -> None:
        if not (pa.types.is_boolean(self.predicate.dtype) or T.is_null(self.predicate.dtype)):
            raise PlanError(f"Filter: predicate '{self.predicate}' is not boolean")

    @property
    def schema(self) -> Schema:
        return self.input.schema

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, input=inputs[0])

    def expressions(self) -> tuple[Expr, ...]:
        return (self.predicate,)

    def with_expressions(self, exprs: tuple[Expr, ...]) -> LogicalPlan:
        return replace(self, predicate=exprs[0])


@dataclass(frozen=True, eq=False)
class Project(LogicalPlan):
    """Compute ``exprs``; ``fields[i]`` names and types ``exprs[i]``."""

    input: LogicalPlan
    exprs: tuple[Expr, ...]
    fields: Schema

    def __post_init__(self) -> None:
        if len(self.exprs) != len(self.fields):
            raise PlanError("Project: expressions and fields differ in number")

    @property
    def schema(self) -> Schema:
        return self.fields

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, input=inputs[0])

    def expressions(self) -> tuple[Expr, ...]:
        return self.exprs

    def with_expressions(self, exprs: tuple[Expr, ...]) -> LogicalPlan:
        return replace(self, exprs=tuple(exprs))


@dataclass(frozen=True, eq=False)
class Join(LogicalPlan):
    """Join ``left`` and ``right`` on ``condition`` (None: always true).

    kinds: inner, left, right, full, cross; semi and anti keep left rows with / without a
    match; mark keeps every left row and appends ``mark`` (boolean): true when a match
    exists, false when none, and -- when ``null_aware`` -- NULL when no match exists but
    the comparison met a NULL (SQL's ``x IN (subquery)``); single is a left join that
    fails when a left row matches more than one right row (scalar subqueries).
    ``null_aware`` on an anti join gives NOT IN semantics.
    ``lookup`` (inner or left): ``right JOIN t FOR SYSTEM_TIME AS OF l.proctime`` -- each
    left row looks up the right side's content as it arrives (a processing-time lookup
    join into a bounded table); the join keeps its sides and is never reordered.
    """

    left: LogicalPlan
    right: LogicalPlan
    kind: str
    condition: Expr | None = None
    mark: Field | None = None
    null_aware: bool = False
    lookup: bool = False

    def __post_init__(self) -> None:
        if self.kind not in JOIN_KINDS:
            raise PlanError(f"Join: unknown kind {self.kind}")
        if (self.kind == "mark") != (self.mark is not None):
            raise PlanError("Join: a mark join needs exactly one mark field")

    @property
    def schema(self) -> Schema:
        left, right = self.left.schema, self.right.schema
        if self.kind in ("semi", "anti"):
            return left
        if self.kind == "mark":
            assert self.mark is not None
            return (*left, self.mark)
        if self.kind in ("right", "full"):
            left = tuple(f.as_nullable() for f in left)
        if self.kind in ("left", "full", "single"):
            right = tuple(f.as_nullable() for f in right)
        return (*left, *right)

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.left, self.right)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, left=inputs[0], right=inputs[1])

    def expressions(self) -> tuple[Expr, ...]:
        return (self.condition,) if self.condition is not None else ()

    def with_expressions(self, exprs: tuple[Expr, ...]) -> LogicalPlan:
        return replace(self, condition=exprs[0] if exprs else None)


@dataclass(frozen=True, eq=False)
class Aggregate(LogicalPlan):
    """Group by ``group_exprs`` (named by ``group_fields``) and compute ``aggs`` (named by
    ``agg_fields``). Output: group fields then aggregate fields. No groups and no aggregates
    is DISTINCT over nothing; no groups means exactly one output row."""

    input: LogicalPlan
    group_exprs: tuple[Expr, ...]
    group_fields: Schema
    aggs: tuple[AggCall, ...]
    agg_fields: Schema

    @property
    def schema(self) -> Schema:
        return (*self.group_fields, *self.agg_fields)

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, input=inputs[0])

    def expressions(self) -> tuple[Expr, ...]:
        return (*self.group_exprs, *self.aggs)

    def with_expressions(self, exprs: tuple[Expr, ...]) -> LogicalPlan:
        n = len(self.group_exprs)
        return replace(self, group_exprs=tuple(exprs[:n]),
                       aggs=tuple(exprs[n:]))  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False)
class Window(LogicalPlan):
    """Append one column per window function call to every input row."""

    input: LogicalPlan
    calls: tuple[WindowCall, ...]
    fields: Schema

    @property
    def schema(self) -> Schema:
        return (*self.input.schema, *self.fields)

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, input=inputs[0])

    def expressions(self) -> tuple[Expr, ...]:
        return self.calls

    def with_expressions(self, exprs: tuple[Expr, ...]) -> LogicalPlan:
        return replace(self, calls=tuple(exprs))  # type: ignore[arg-type]


@dataclass(frozen=True, eq=False)
class Sort(LogicalPlan):
    input: LogicalPlan
    keys: tuple[SortKey, ...]

    @property
    def schema(self) -> Schema:
        return self.input.schema

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, input=inputs[0])

    def expressions(self) -> tuple[Expr, ...]:
        return tuple(k.expr for k in self.keys)

    def with_expressions(self, exprs: tuple[Expr, ...]) -> LogicalPlan:
        return replace(self, keys=tuple(replace(k, expr=e) for k, e in zip(self.keys, exprs)))


@dataclass(frozen=True, eq=False)
class Limit(LogicalPlan):
    """Skip ``offset`` rows then keep at most ``limit`` (None: all)."""

    input: LogicalPlan
    limit: int | None
    offset: int = 0

    @property
    def schema(self) -> Schema:
        return self.input.schema

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, input=inputs[0])


@dataclass(frozen=True, eq=False)
class SetOp(LogicalPlan):
    """UNION / INTERSECT / EXCEPT [ALL]. Inputs match ``fields`` by position and already
    have the output types (the binder casts)."""

    left: LogicalPlan
    right: LogicalPlan
    kind: str
    all: bool
    fields: Schema

    def __post_init__(self) -> None:
        if self.kind not in SET_KINDS:
            raise PlanError(f"SetOp: unknown kind {self.kind}")
        if not (len(self.left.schema) == len(self.right.schema) == len(self.fields)):
            raise PlanError(f"{self.kind.upper()}: inputs have different numbers of columns")

    @property
    def schema(self) -> Schema:
        return self.fields

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.left, self.right)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, left=inputs[0], right=inputs[1])


@dataclass(frozen=True, eq=False)
class SubqueryAlias(LogicalPlan):
    """Marks where a derived table or CTE was inlined; removed before execution. Kept only
    so EXPLAIN can show the name; passes its input's schema through."""

    input: LogicalPlan
    name: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def schema(self) -> Schema:
        return self.input.schema

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, input=inputs[0])


WINDOW_KINDS = ("tumble", "hop", "cumulate", "session")


@dataclass(frozen=True)
class WindowShape:
    """The windows of a window TVF, times in milliseconds (Flink's parameters):
    ``tumble`` size (+offset); ``hop`` slide, size (+offset); ``cumulate`` step, size (the
    max size, +offset); ``session`` gap. A window is ``[start, end)``."""

    kind: str
    size: int = 0
    slide: int = 0
    step: int = 0
    gap: int = 0
    offset: int = 0

    def __post_init__(self) -> None:
        if self.kind not in WINDOW_KINDS:
            raise PlanError(f"unknown window kind {self.kind!r}")

    def describe(self) -> str:
        """e.g. ``tumble(size=10000ms)``, for EXPLAIN."""
        names = {"tumble": ("size", "offset"), "hop": ("slide", "size", "offset"),
                 "cumulate": ("step", "size", "offset"), "session": ("gap",)}[self.kind]
        parts = [f"{n}={getattr(self, n)}ms" for n in names
                 if n != "offset" or self.offset]
        return f"{self.kind}({', '.join(parts)})"


@dataclass(frozen=True, eq=False)
class WindowTableFunction(LogicalPlan):
    """Flink's window TVFs (``TUMBLE`` / ``HOP`` / ``CUMULATE`` / ``SESSION``): every input
    row once per window it belongs to, by the event time ``time_column``, followed by
    ``window_fields`` = (window_start, window_end, window_time) -- window_time is
    ``window_end - 1 ms``, the rowtime of a window's results.

    ``partition_by`` are SESSION's keys (sessions are per key). ``watermark_delay_ms`` is
    the bounded out-of-orderness of the WATERMARK declared on ``time_column`` when the
    input is the table that declares it (None: no event-time watermark), which streaming
    execution uses to drop late records.
    """

    input: LogicalPlan
    shape: WindowShape
    time_column: Expr
    partition_by: tuple[Expr, ...]
    window_fields: Schema
    watermark_delay_ms: int | None = None

    def __post_init__(self) -> None:
        if len(self.window_fields) != 3:
            raise PlanError("WindowTableFunction: needs window_start, window_end, window_time")
        if not pa.types.is_timestamp(self.time_column.dtype):
            raise PlanError(f"WindowTableFunction: time column '{self.time_column}' is not a "
                            "timestamp")

    @property
    def schema(self) -> Schema:
        return (*self.input.schema, *self.window_fields)

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, input=inputs[0])

    def expressions(self) -> tuple[Expr, ...]:
        return (self.time_column, *self.partition_by)

    def with_expressions(self, exprs: tuple[Expr, ...]) -> LogicalPlan:
        return replace(self, time_column=exprs[0], partition_by=tuple(exprs[1:]))


@dataclass(frozen=True, eq=False)
class TableFunctionJoin(LogicalPlan):
    """``input, LATERAL TABLE(function(args))``: every input row followed by each row the
    table function returns for it (``fields``, named by the query's column aliases).

    ``args`` are expressions over the input's columns. ``outer`` is the LEFT JOIN ... ON
    TRUE form: an input row for which the function returns no rows is kept once, with
    NULLs in ``fields``; otherwise it is dropped (CROSS JOIN / comma). A table function
    alone in FROM has a one-row, no-column ``Values`` as input.
    """

    input: LogicalPlan
    function: UserFunction
    args: tuple[Expr, ...]
    fields: Schema
    outer: bool = False

    def __post_init__(self) -> None:
        if self.function.kind != TABLE:
            raise PlanError(f"TableFunctionJoin: '{self.function.name}' is a "
                            f"{self.function.kind} function, not a table function")
        if len(self.fields) != len(self.function.result_fields):
            raise PlanError(f"TableFunctionJoin: '{self.function.name}' returns "
                            f"{len(self.function.result_fields)} columns, not "
                            f"{len(self.fields)}")

    @property
    def schema(self) -> Schema:
        return (*self.input.schema, *self.fields)

    @property
    def inputs(self) -> tuple[LogicalPlan, ...]:
        return (self.input,)

    def with_inputs(self, inputs: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return replace(self, input=inputs[0])

    def expressions(self) -> tuple[Expr, ...]:
        return self.args

    def with_expressions(self, exprs: tuple[Expr, ...]) -> LogicalPlan:
        return replace(self, args=tuple(exprs))


def walk_plan(plan: LogicalPlan):  # type: ignore[no-untyped-def]
    """Pre-order traversal of a plan's nodes."""
    yield plan
    for child in plan.inputs:
        yield from walk_plan(child)


def transform_plan(plan: LogicalPlan, fn) -> LogicalPlan:  # type: ignore[no-untyped-def]
    """Bottom-up plan rewrite; ``fn`` returns a replacement node or None to keep it."""
    inputs = plan.inputs
    if inputs:
        new_inputs = tuple(transform_plan(c, fn) for c in inputs)
        if any(a is not b for a, b in zip(new_inputs, inputs)):
            plan = plan.with_inputs(new_inputs)
    result = fn(plan)
    return plan if result is None else result


def validate(plan: LogicalPlan, outer: set[int] | None = None) -> None:
    """Check every expression refers to columns of its node's inputs (or of ``outer``).

    Run after every logical rule; raises PlanError naming the node.
    """
    for child in plan.inputs:
        validate(child, outer)
    available: set[int] = set(outer or ())
    for child in plan.inputs:
        available |= child.column_ids
    if isinstance(plan, Window):
        available |= plan.input.column_ids
    if isinstance(plan, Scan):
        available |= plan.column_ids
    plan._check_refs(plan.expressions(), available, "expression")
