"""Physical rule ``plan_window_aggregate``: an Aggregate over a window TVF, grouped by the
TVF's window_start and window_end (plus keys, and possibly its window_time), becomes one
WindowAggregateExec -- Flink's window aggregate, which emits each window once when the
watermark passes its end and drops late records.

Matched shape: ``Aggregate -> (Project | Filter)* -> WindowTableFunction``. Projects are
substituted into the expressions above them and filters become the node's ``predicate``;
afterwards the group keys may use window_start / window_end only as bare columns, the
aggregate arguments and filters not at all, and every aggregate must be one the window
operator computes (count, count(*), sum, min, max, avg, var_* / stddev_*, DISTINCT too -- as in Flink, a
DISTINCT aggregate stays inside the window aggregate --; a FILTER is folded into the
arguments by ``aggregate_filter``). Anything
else keeps the generic plan (window TVF exec + hash aggregate), which gives the same rows
over bounded input without dropping late records -- except SESSION windows, which only
exist as window aggregates here, and need their PARTITION BY keys as the group keys.

In ``execution.runtime-mode`` = ``streaming`` the watermarks come from the table's
WATERMARK through the streaming pass (``optimizer/streaming``); in ``batch`` (the default)
every window fires at end of input, as in Flink's batch mode.
"""

from __future__ import annotations

from collections.abc import Callable

from flowsql.errors import PlanError
from flowsql.optimizer.aggregate_filter import filter_into_arguments
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.expressions import (
    AggCall,
    ColumnRef,
    Expr,
    column_ids,
    conjoin,
    replace_columns,
)
from flowsql.planner.logical import Aggregate, Filter, LogicalPlan, Project, WindowTableFunction
from flowsql.planner.physical import (
    STREAMING_AGGREGATE_FUNCTIONS,
    VARIANCE_FUNCTIONS,
    WINDOW_END,
    WINDOW_START,
    WINDOW_TIME,
    PhysicalPlan,
    WindowAggregateExec,
)


def runtime_mode(settings: dict[str, str]) -> str:
    """``execution.runtime-mode``: ``batch`` or ``streaming``."""
    return SettingValues(settings).string("execution.runtime-mode")


def watermark_interval_ms(settings: dict[str, str]) -> int:
    """``pipeline.auto-watermark-interval`` in milliseconds (a duration, e.g. ``1 s``)."""
    return SettingValues(settings).duration_ms("pipeline.auto-watermark-interval")


def plan_window_aggregate(node: Aggregate, rows: float, settings: dict[str, str],
                          plan: Callable[[LogicalPlan], PhysicalPlan]) -> PhysicalPlan | None:
    """The WindowAggregateExec for ``node``, or None when the shape does not match."""
    exprs: list[Expr] = [*node.group_exprs, *node.aggs]
    predicates: list[Expr] = []
    child = node.input
    while isinstance(child, Project | Filter):
        if isinstance(child, Project):
            mapping = {f.cid: e for f, e in zip(child.fields, child.exprs)}
            exprs = [replace_columns(e, mapping) for e in exprs]
            predicates = [replace_columns(p, mapping) for p in predicates]
        else:
            predicates.append(child.predicate)
        child = child.input
    if not isinstance(child, WindowTableFunction):
        return None
    tvf = child
    groups = exprs[:len(node.group_exprs)]
    aggs = [filter_into_arguments(a) for a in exprs[len(node.group_exprs):]]  # type: ignore[arg-type]
    matched = _match(tvf, groups, aggs, predicates)  # type: ignore[arg-type]
    if matched is None:
        if tvf.shape.kind == "session":
            raise PlanError("SESSION windows are supported only as GROUP BY window_start, "
                            "window_end and the SESSION's PARTITION BY keys, with count, "
                            "sum, min, max or avg")
        return None
    keys, slots = matched
    # in streaming mode the watermarks come from the source (the streaming pass adds a
    # WatermarkAssignerExec and checks that the time column is a rowtime attribute)
    return WindowAggregateExec(
        plan(tvf.input), tvf.shape, tvf.time_column, tuple(keys), tuple(slots),
        node.group_fields, tuple(aggs), node.agg_fields, rows,  # type: ignore[arg-type]
        predicate=conjoin(predicates), watermark_delay_ms=None,
        watermark_interval_ms=watermark_interval_ms(settings))


def _match(tvf: WindowTableFunction, groups: list[Expr], aggs: list[AggCall],
           predicates: list[Expr]) -> tuple[list[Expr], list[int | str]] | None:
    """(keys, group slots) when the expressions fit a window aggregate."""
    start, end, time = (f.cid for f in tvf.window_fields)
    window_ids = {start, end, time}
    keys: list[Expr] = []
    slots: list[int | str] = []
    bounds = {start: WINDOW_START, end: WINDOW_END, time: WINDOW_TIME}
    for g in groups:
        if isinstance(g, ColumnRef) and g.cid in bounds:
            slots.append(bounds[g.cid])
        elif column_ids(g) & window_ids:
            return None
        else:
            slots.append(len(keys))
            keys.append(g)
    if WINDOW_START not in slots or WINDOW_END not in slots:
        return None
    if any((a.name not in STREAMING_AGGREGATE_FUNCTIONS and a.function is None)
           or (a.function is not None and a.filter is not None)
           or (a.distinct and a.name in VARIANCE_FUNCTIONS)
           or any(column_ids(x) & window_ids for x in a.args) for a in aggs):
        return None
    if any(column_ids(p) & window_ids for p in predicates):
        return None
    if tvf.shape.kind == "session":
        partition = {e.cid for e in tvf.partition_by if isinstance(e, ColumnRef)}
        key_ids = {k.cid for k in keys if isinstance(k, ColumnRef)}
        if len(key_ids) != len(keys) or partition != key_ids:
            return None
    return keys, slots
