"""EXPLAIN text for logical and physical plans.

Deterministic by construction: one node per line, children indented two spaces, columns
and tables shown by name (never ids, addresses or paths), estimates rounded. Golden files
compare this text, so any change here is a change of every golden file.
"""

from __future__ import annotations

from collections.abc import Iterable

from flowsql.planner.config.connectors import connector_of
from flowsql.planner.expressions import (
    SUBQUERY_TYPES,
    ColumnRef,
    Expr,
    SortKey,
    UdfCall,
    render,
    walk,
)
from flowsql.planner.logical import (
    Aggregate,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    Scan,
    SetOp,
    Sort,
    SubqueryAlias,
    TableFunctionJoin,
    Values,
    Window,
    WindowTableFunction,
)
from flowsql.planner.operator_ids import keeps_state
from flowsql.planner.physical import (
    ExchangeExec,
    FilterExec,
    HashAggregateExec,
    HashJoinExec,
    LimitExec,
    NestedLoopJoinExec,
    PhysicalPlan,
    ProjectExec,
    ReuseSubplanExec,
    SetOpExec,
    SharedSubplanExec,
    SortAggregateExec,
    SortExec,
    SortMergeJoinExec,
    TableFunctionExec,
    TableScanExec,
    TopNExec,
    ValuesExec,
    WindowAggregateExec,
    WindowExec,
    WindowTableFunctionExec,
)
from flowsql.planner.physical_streaming import (
    GroupAggregateExec,
    IntervalJoinExec,
    LookupJoinExec,
    OverAggregateExec,
    ProctimeWatermarkExec,
    RankExec,
    SinkExec,
    StreamJoinExec,
    WatermarkAssignerExec,
    WindowedAggregateExec,
    WindowJoinExec,
)
from flowsql.planner.schema import Schema
from flowsql.planner.udf import UserFunction

INDENT = "  "


def explain_logical(plan: LogicalPlan) -> str:
    """The logical plan as an indented tree; subquery plans appear under their node."""
    lines: list[str] = []
    _logical(plan, 0, lines)
    return "\n".join(lines)


def explain_physical(plan: PhysicalPlan, operator_ids: dict[int, str] | None = None,
                     estimates: bool = True, notes: dict[int, str] | None = None) -> str:
    """The physical plan as an indented tree with estimated rows per node; with
    ``operator_ids`` (``planner.operator_ids.node_operator_ids``, for streaming plans),
    every node that keeps state also shows its operator id. ``estimates=False`` leaves the
    estimated rows out (``EXPLAIN (COSTS OFF)``): the plan's shape alone, which is what
    golden files compare so that an estimator change does not rewrite them all. With
    ``notes`` (by node id; EXPLAIN VERBOSE's cost and delivered properties), each node's
    note ends its line."""
    lines: list[str] = []
    _physical(plan, 0, lines, operator_ids, estimates, notes)
    return "\n".join(lines)


def describe_physical(plan: PhysicalPlan) -> str:
    """One node's EXPLAIN line without its estimate or children (EXPLAIN ANALYZE prints
    its own figures beside it)."""
    return _physical_line(plan)


# -- shared pieces -----------------------------------------------------------------------
def _list(items: Iterable[str]) -> str:
    return "[" + ", ".join(items) + "]"


def _columns(fields: Schema) -> str:
    return _list(f.name for f in fields)


def _hints(exprs: Iterable[Expr]) -> str:
    """`` hints: f(selectivity=0.1, cost_per_row=50)`` for the user-defined functions the
    expressions call with hints given (the optimizer used them to order and place the
    predicates); empty when none was given (the defaults applied)."""
    out: list[str] = []
    for expr in exprs:
        for call in (e for e in walk(expr) if isinstance(e, UdfCall)):
            hints = call.function.hints
            parts = [f"{name}={value:g}" for name, value in (
                ("selectivity", hints.selectivity), ("cost_per_row", hints.cost_per_row))
                if value is not None]
            if not hints.deterministic:
                parts.append("deterministic=false")
            text = f"{call.function.name}({', '.join(parts)})"
            if parts and text not in out:
                out.append(text)
    return f" hints: {', '.join(out)}" if out else ""


def _table_function(function: UserFunction, args: tuple[Expr, ...], fields: Schema,
                    outer: bool) -> str:
    """``[left] f(x) -> [a, b]``, with the rows_per_call hint when one was given."""
    call = f"{function.name}({', '.join(render(a) for a in args)})"
    hint = function.hints.rows_per_call
    hints = f" hints: {function.name}(rows_per_call={hint:g})" if hint is not None else ""
    return f"[{'left' if outer else 'cross'}] {call} -> {_columns(fields)}{hints}"


def _named(exprs: Iterable[Expr], fields: Schema) -> str:
    """``name := expr``, or just the name for a column passed through under its name."""
    out = []
    for e, f in zip(exprs, fields):
        text = render(e)
        out.append(text if isinstance(e, ColumnRef) and text == f.name else f"{f.name} := {text}")
    return _list(out)


def _keys(keys: Iterable[SortKey]) -> str:
    return _list(str(k) for k in keys)


def _filters(filters: tuple[Expr, ...]) -> str:
    return f" filters={_list(render(f) for f in filters)}" if filters else ""


def _table(table_name: str, alias: str | None) -> str:
    return table_name if alias is None or alias == table_name else f"{table_name} AS {alias}"


def _join_label(kind: str, mark_name: str | None, null_aware: bool) -> str:
    flags = [kind] + (["null_aware"] if null_aware else [])
    return ", ".join(flags) + (f", mark={mark_name}" if mark_name else "")


def _limit_text(limit: int | None, offset: int) -> str:
    text = f"limit={limit if limit is not None else 'ALL'}"
    return text + (f" offset={offset}" if offset else "")


# -- logical -----------------------------------------------------------------------------
def _logical(plan: LogicalPlan, depth: int, lines: list[str]) -> None:
    lines.append(INDENT * depth + _logical_line(plan))
    for e in plan.expressions():
        for sub in (x for x in walk(e) if isinstance(x, SUBQUERY_TYPES)):
            lines.append(INDENT * (depth + 1) + f"Subquery {render(sub)}")
            _logical(sub.plan, depth + 2, lines)  # type: ignore[attr-defined]
    for child in plan.inputs:
        _logical(child, depth + 1, lines)


def _logical_line(plan: LogicalPlan) -> str:
    if isinstance(plan, Scan):
        return f"Scan {_table(plan.table.name, plan.alias)} {_columns(plan.fields)}" \
               f"{_filters(plan.filters)}{_hints(plan.filters)}"
    if isinstance(plan, Values):
        return f"Values {_columns(plan.fields)} rows={len(plan.rows)}"
    if isinstance(plan, Filter):
        return f"Filter {render(plan.predicate)}{_hints((plan.predicate,))}"
    if isinstance(plan, Project):
        return f"Project {_named(plan.exprs, plan.fields)}"
    if isinstance(plan, Join):
        mark = plan.mark.name if plan.mark is not None else None
        on = f" on {render(plan.condition)}" if plan.condition is not None else ""
        lookup = ", lookup" if plan.lookup else ""
        return f"Join[{_join_label(plan.kind, mark, plan.null_aware)}{lookup}]{on}"
    if isinstance(plan, Aggregate):
        return (f"Aggregate groups={_named(plan.group_exprs, plan.group_fields)} "
                f"aggs={_named(plan.aggs, plan.agg_fields)}")
    if isinstance(plan, Window):
        return f"Window {_named(plan.calls, plan.fields)}"
    if isinstance(plan, Sort):
        return f"Sort {_keys(plan.keys)}"
    if isinstance(plan, Limit):
        return f"Limit {_limit_text(plan.limit, plan.offset)}"
    if isinstance(plan, SetOp):
        return f"SetOp[{plan.kind}{' all' if plan.all else ''}] {_columns(plan.fields)}"
    if isinstance(plan, SubqueryAlias):
        return f"SubqueryAlias {plan.name}"
    if isinstance(plan, TableFunctionJoin):
        return "TableFunctionJoin" + _table_function(plan.function, plan.args, plan.fields,
                                                     plan.outer)
    if isinstance(plan, WindowTableFunction):
        partition = (f" partition_by={_list(render(k) for k in plan.partition_by)}"
                     if plan.partition_by else "")
        watermark = (f" watermark={plan.watermark_delay_ms}ms"
                     if plan.watermark_delay_ms is not None else "")
        return (f"WindowTableFunction {plan.shape.describe()} "
                f"time={render(plan.time_column)}{partition}{watermark}")
    return type(plan).__name__


# -- physical ----------------------------------------------------------------------------
def _physical(plan: PhysicalPlan, depth: int, lines: list[str],
              operator_ids: dict[int, str] | None, estimates: bool = True,
              notes: dict[int, str] | None = None) -> None:
    uid = ""
    if operator_ids is not None and keeps_state(plan) and id(plan) in operator_ids:
        uid = f" id={operator_ids[id(plan)]}"
    rows = f" rows=~{round(plan.est_rows)}" if estimates else ""
    note = f" {notes[id(plan)]}" if notes is not None and id(plan) in notes else ""
    lines.append(INDENT * depth + _physical_line(plan) + f"{rows}{uid}{note}")
    # a lookup join's table is no input of the dataflow, but it is part of the plan
    children = (*plan.inputs, plan.table) if isinstance(plan, LookupJoinExec) else plan.inputs
    for child in children:
        _physical(child, depth + 1, lines, operator_ids, estimates, notes)


def _physical_line(plan: PhysicalPlan) -> str:
    if isinstance(plan, TableScanExec):
        watermark = ""
        if plan.watermark is not None:
            delay = f" - {plan.watermark.delay_ms}ms" if plan.watermark.delay_ms else ""
            watermark = f" watermark=[{render(plan.watermark.time)}{delay} per split]"
        options = plan.table.options
        changelog = " changelog" if connector_of(options).reads_changelog(options) else ""
        # where the scan's estimates come from: measured (analyzed), footers, or guesses
        origin = f" stats={plan.table.statistics.origin}"
        return (f"TableScan {plan.table.name} {_columns(plan.fields)}{_filters(plan.filters)}"
                f"{watermark}{changelog}{_hints(plan.filters)}{origin}")
    if isinstance(plan, ValuesExec):
        return f"Values {_columns(plan.fields)}"
    if isinstance(plan, FilterExec):
        return f"Filter {render(plan.predicate)}{_hints((plan.predicate,))}"
    if isinstance(plan, ProjectExec):
        return f"Project {_named(plan.exprs, plan.fields)}"
    if isinstance(plan, HashJoinExec):
        mark = plan.mark.name if plan.mark is not None else None
        label = _join_label(plan.kind, mark, plan.null_aware) + f", build={plan.build_side}"
        label += ", lookup" if plan.lookup else ""
        keys = _list(f"{render(a)} = {render(b)}" for a, b in zip(plan.left_keys, plan.right_keys))
        residual = f" residual={render(plan.residual)}" if plan.residual is not None else ""
        return f"HashJoin[{label}] keys={keys}{residual}"
    if isinstance(plan, NestedLoopJoinExec):
        mark = plan.mark.name if plan.mark is not None else None
        on = f" on {render(plan.condition)}" if plan.condition is not None else ""
        return f"NestedLoopJoin[{_join_label(plan.kind, mark, plan.null_aware)}]{on}"
    if isinstance(plan, SortMergeJoinExec):
        keys = _list(f"{render(a)} = {render(b)}" for a, b in zip(plan.left_keys, plan.right_keys))
        residual = f" residual={render(plan.residual)}" if plan.residual is not None else ""
        return f"SortMergeJoin[{plan.kind}] keys={keys}{residual}"
    if isinstance(plan, SortAggregateExec):
        return (f"SortAggregate groups={_named(plan.group_exprs, plan.group_fields)} "
                f"aggs={_named(plan.aggs, plan.agg_fields)}")
    if isinstance(plan, HashAggregateExec):
        return (f"HashAggregate groups={_named(plan.group_exprs, plan.group_fields)} "
                f"aggs={_named(plan.aggs, plan.agg_fields)}")
    if isinstance(plan, WindowExec):
        return f"Window {_named(plan.calls, plan.fields)}"
    if isinstance(plan, SortExec):
        return f"Sort {_keys(plan.keys)}"
    if isinstance(plan, TopNExec):
        return f"TopN {_keys(plan.keys)} {_limit_text(plan.limit, plan.offset)}"
    if isinstance(plan, LimitExec):
        return f"Limit {_limit_text(plan.limit, plan.offset)}"
    if isinstance(plan, SetOpExec):
        return f"SetOp[{plan.kind}{' all' if plan.all else ''}] {_columns(plan.fields)}"
    if isinstance(plan, ExchangeExec):
        keys = f" keys={_list(render(k) for k in plan.keys)}" if plan.keys else ""
        return f"Exchange[{plan.kind}]{keys}"
    if isinstance(plan, WindowTableFunctionExec):
        return f"WindowTableFunction {plan.shape.describe()} time={render(plan.time_column)}"
    if isinstance(plan, TableFunctionExec):
        return "TableFunction" + _table_function(plan.function, plan.args, plan.fields,
                                                 plan.outer)
    if isinstance(plan, WindowAggregateExec):
        return _window_aggregate_line(plan)
    if isinstance(plan, SharedSubplanExec):
        return f"SharedSubplan #{plan.share_id}"
    if isinstance(plan, ReuseSubplanExec):
        return f"ReuseSubplan #{plan.share_id} {_columns(plan.fields)}"
    streaming = _streaming_line(plan)
    return streaming if streaming is not None else type(plan).__name__


def _streaming_line(plan: PhysicalPlan) -> str | None:
    """Lines of the nodes only streaming plans have (``physical_streaming``)."""
    if isinstance(plan, WatermarkAssignerExec):
        return (f"WatermarkAssigner {render(plan.time_column)} - {plan.delay_ms}ms "
                f"interval={plan.interval_ms}ms")
    if isinstance(plan, ProctimeWatermarkExec):
        return f"ProctimeWatermark {render(plan.time_column)} (wall clock)"
    if isinstance(plan, GroupAggregateExec):
        return (f"GroupAggregate[changelog] groups={_named(plan.group_exprs, plan.group_fields)} "
                f"aggs={_named(plan.aggs, plan.agg_fields)}")
    if isinstance(plan, WindowedAggregateExec):
        window = f"({render(plan.window[0])}, {render(plan.window[1])})"
        return (f"WindowedAggregate window={window} "
                f"groups={_named(plan.group_exprs, plan.group_fields)} "
                f"aggs={_named(plan.aggs, plan.agg_fields)}")
    if isinstance(plan, StreamJoinExec | IntervalJoinExec):
        keys = _list(f"{render(a)} = {render(b)}" for a, b in zip(plan.left_keys, plan.right_keys))
        residual = f" residual={render(plan.residual)}" if plan.residual is not None else ""
        if isinstance(plan, StreamJoinExec):
            mode = "updating" if plan.updating else "insert-only"
            return f"StreamJoin[{plan.kind}, {mode}] keys={keys}{residual}"
        return (f"IntervalJoin[{plan.kind}] keys={keys} {render(plan.right_time)} BETWEEN "
                f"{render(plan.left_time)} + {plan.lower_ms}ms AND "
                f"{render(plan.left_time)} + {plan.upper_ms}ms{residual}")
    if isinstance(plan, LookupJoinExec):
        keys = _list(f"{render(a)} = {render(b)}" for a, b in zip(plan.left_keys, plan.right_keys))
        residual = f" residual={render(plan.residual)}" if plan.residual is not None else ""
        return f"LookupJoin[{plan.kind}] keys={keys}{residual}"
    if isinstance(plan, WindowJoinExec):
        keys = _list(f"{render(a)} = {render(b)}" for a, b in zip(plan.left_keys, plan.right_keys))
        residual = f" residual={render(plan.residual)}" if plan.residual is not None else ""
        window = f"({render(plan.left_window[0])}, {render(plan.left_window[1])})"
        return f"WindowJoin[{plan.kind}] window={window} keys={keys}{residual}"
    if isinstance(plan, OverAggregateExec):
        preceding = "unbounded" if plan.preceding is None else str(plan.preceding)
        partition = _list(render(k) for k in plan.partition_keys)
        return (f"OverAggregate partition={partition} order={render(plan.time_column)} "
                f"{plan.frame} preceding={preceding} aggs={_named(plan.aggs, plan.fields)}")
    if isinstance(plan, RankExec):
        kind = ("WindowRank" if plan.window is not None
                else "Deduplicate" if plan.time_attribute is not None else "Rank")
        partition = _list(render(k) for k in plan.partition_keys)
        window = (f" window=({render(plan.window[0])}, {render(plan.window[1])})"
                  if plan.window is not None else "")
        rank = f" rank={plan.rank_field.name}" if plan.rank_field is not None else ""
        return (f"{kind} partition={partition}{window} order={_keys(plan.order)} "
                f"range=[{plan.lower}, {plan.upper}]{rank}")
    if isinstance(plan, SinkExec):
        return f"Sink {plan.table.name} ({plan.table.connector})"
    return None


def _window_aggregate_line(plan: WindowAggregateExec) -> str:
    groups = [s if isinstance(s, str) else render(plan.keys[s]) for s in plan.group_slots]
    text = (f"WindowAggregate {plan.shape.describe()} time={render(plan.time_column)} "
            f"groups={_list(groups)} aggs={_named(plan.aggs, plan.agg_fields)}")
    if plan.predicate is not None:
        text += f" where={render(plan.predicate)}"
    if plan.watermark_delay_ms is not None:
        text += (f" watermark={plan.watermark_delay_ms}ms"
                 f" interval={plan.watermark_interval_ms}ms")
    return text
